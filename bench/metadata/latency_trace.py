#!/usr/bin/python3
"""One keep-alive connection asking for meta_data.json N times in a row, timing each request
(run inside a VM namespace; run.sh does it when TRACE_REQUESTS=N is set). Prints the
percentiles and every request slower than --slow-ms with its time from the start, so that slow
requests that come in bursts (something periodic on the machine) show as such, where wrk only
gives the percentiles.

  latency_trace.py [--requests 30000] [--slow-ms 2] [--show 40]
"""
import argparse
import socket
import time

REQ = (b"GET /openstack/latest/meta_data.json HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--requests", type=int, default=30000)
    p.add_argument("--slow-ms", type=float, default=2.0)
    p.add_argument("--show", type=int, default=40)
    a = p.parse_args()
    s = socket.create_connection(("169.254.169.254", 80), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    times = []
    start = time.perf_counter()
    for _ in range(a.requests):
        t0 = time.perf_counter()
        s.sendall(REQ)
        while True:
            head_end = buf.find(b"\r\n\r\n")
            if head_end >= 0:
                length = 0
                for line in buf[:head_end].split(b"\r\n")[1:]:
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                if len(buf) >= head_end + 4 + length:
                    buf = buf[head_end + 4 + length:]
                    break
            chunk = s.recv(65536)
            if not chunk:
                raise SystemExit("latency_trace.py: the server closed the connection")
            buf += chunk
        times.append((t0 - start, time.perf_counter() - t0))
    lat = sorted(d for _, d in times)
    pct = [lat[min(len(lat) - 1, int(len(lat) * q))] * 1000 for q in (0.5, 0.9, 0.99, 0.999)]
    slow = [(t, d) for t, d in times if d * 1000 > a.slow_ms]
    print("requests %d: p50 %.3f p90 %.3f p99 %.3f p99.9 %.3f ms; slower than %g ms: %d"
          % (len(times), *pct, a.slow_ms, len(slow)))
    for t, d in slow[:a.show]:
        print("  at +%.4f s: %.2f ms" % (t, d * 1000))


if __name__ == "__main__":
    main()
