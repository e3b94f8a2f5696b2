#!/usr/bin/python3
"""GETs URL every --period-ms (a new connection each time, as cloud-init and the kubelet do) and
prints one line per attempt, "START_EPOCH STATUS MILLISECONDS KIND" (STATUS 0: no answer; KIND ok,
refused, timeout (nothing within --timeout-ms: a dropped SYN) or the error's name), until it is
killed or --seconds pass. Run it inside a namespace: ip netns exec NS poll.py URL.
"""
import argparse
import http.client
import sys
import time
import urllib.parse


def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("--period-ms", type=float, default=50)
    p.add_argument("--timeout-ms", type=float, default=1000)
    p.add_argument("--seconds", type=float, default=3600)
    a = p.parse_args()
    u = urllib.parse.urlsplit(a.url)
    path = u.path + ("?" + u.query if u.query else "")
    end = time.time() + a.seconds
    next_at = time.time()
    while time.time() < end:
        start = time.time()
        status, kind = 0, "ok"
        try:
            c = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=a.timeout_ms / 1000)
            c.request("GET", path, headers={"Connection": "close"})
            r = c.getresponse()
            r.read()
            status = r.status
            c.close()
        except ConnectionRefusedError:
            kind = "refused"
        except (TimeoutError, OSError) as e:
            kind = "timeout" if isinstance(e, TimeoutError) or "timed out" in str(e) else type(e).__name__
        print("%.6f %d %.1f %s" % (start, status, (time.time() - start) * 1000, kind), flush=True)
        next_at += a.period_ms / 1000
        time.sleep(max(0.0, next_at - time.time()))
        next_at = max(next_at, time.time() - a.period_ms / 1000)


if __name__ == "__main__":
    sys.exit(main())
