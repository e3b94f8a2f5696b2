"""Request bodies in Kubernetes' protobuf encoding (application/vnd.kubernetes.protobuf), decoded
to the JSON form the store keeps: only the kinds a real client sends this way to the fake. helm's
release storage (its Secret driver, on client-go's typed clientset) creates and updates its
release Secrets in protobuf; a real kube-apiserver accepts that for every built-in kind.

The envelope (k8s.io/apimachinery runtime/serializer/protobuf): the magic bytes "k8s\\0", then a
runtime.Unknown message {1: TypeMeta {1: apiVersion, 2: kind}, 2: raw, 3: contentEncoding,
4: contentType}, where raw is the object's own message (k8s.io/api core/v1 generated.proto).
"""

MAGIC = b"k8s\x00"


class ProtobufError(ValueError):
    pass


def _varint(buf, pos):
    value, shift = 0, 0
    while True:
        if pos >= len(buf):
            raise ProtobufError("truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ProtobufError("varint longer than 64 bits")


def fields(buf):
    """(field number, wire type, value) of each field: bytes for length-delimited, int for varints."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            length, pos = _varint(buf, pos)
            if pos + length > len(buf):
                raise ProtobufError("field %d runs past the end of its message" % number)
            value, pos = buf[pos:pos + length], pos + length
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ProtobufError("wire type %d of field %d is not supported" % (wire, number))
        yield number, wire, value


def _text(value):
    return value.decode("utf-8")


def _map_entry(buf, value_decoder):
    key, value = "", value_decoder(b"")
    for number, _, v in fields(buf):
        if number == 1:
            key = _text(v)
        elif number == 2:
            value = value_decoder(v)
    return key, value


def _object_meta(buf):
    """ObjectMeta: the fields a client sets on create or update (the server owns the rest)."""
    meta = {}
    scalar = {1: "name", 2: "generateName", 3: "namespace", 5: "uid", 6: "resourceVersion"}
    for number, _, v in fields(buf):
        if number in scalar:
            meta[scalar[number]] = _text(v)
        elif number == 7:
            meta["generation"] = v
        elif number in (11, 12):
            key, value = _map_entry(v, _text)
            meta.setdefault("labels" if number == 11 else "annotations", {})[key] = value
        elif number == 14:
            meta.setdefault("finalizers", []).append(_text(v))
    return meta


def _secret(buf):
    import base64
    obj = {}
    for number, _, v in fields(buf):
        if number == 1:
            obj["metadata"] = _object_meta(v)
        elif number == 2:
            key, value = _map_entry(v, bytes)
            obj.setdefault("data", {})[key] = base64.b64encode(value).decode()
        elif number == 3:
            obj["type"] = _text(v)
        elif number == 4:
            key, value = _map_entry(v, _text)
            obj.setdefault("stringData", {})[key] = value
        elif number == 5:
            obj["immutable"] = bool(v)
    return obj


def _config_map(buf):
    obj = {}
    for number, _, v in fields(buf):
        if number == 1:
            obj["metadata"] = _object_meta(v)
        elif number == 2:
            key, value = _map_entry(v, _text)
            obj.setdefault("data", {})[key] = value
        elif number == 4:
            obj["immutable"] = bool(v)
    return obj


DECODERS = {("v1", "Secret"): _secret, ("v1", "ConfigMap"): _config_map}


def decode(body):
    """The object of a protobuf request body, as JSON; ProtobufError for what the fake cannot read."""
    if not body.startswith(MAGIC):
        raise ProtobufError("the body does not start with the protobuf magic k8s\\0")
    api_version = kind = ""
    raw = b""
    for number, _, v in fields(body[len(MAGIC):]):
        if number == 1:
            for n, _, t in fields(v):
                if n == 1:
                    api_version = _text(t)
                elif n == 2:
                    kind = _text(t)
        elif number == 2:
            raw = v
        elif number == 3 and v:
            raise ProtobufError("content encoding %r is not supported" % _text(v))
    decoder = DECODERS.get((api_version, kind))
    if decoder is None:
        raise ProtobufError("the fake reads protobuf only for %s, not %s/%s"
                            % (", ".join("%s/%s" % k for k in DECODERS), api_version, kind))
    obj = decoder(raw)
    obj["apiVersion"], obj["kind"] = api_version, kind
    return obj
