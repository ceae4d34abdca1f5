#!/bin/bash
# wait_lab.sh SECONDS: wait until the lab service answers on the VM's port 8888 with the
# token from /etc/labtools/jupyter.env; prints the seconds it took, or why not.
set -u
limit=$1
. /etc/labtools/jupyter.env
start=$(cut -d' ' -f1 /proc/uptime)
python3 - "$limit" "$JUPYTER_TOKEN" "$start" <<'PY'
import sys, time, urllib.request
limit, token, start = float(sys.argv[1]), sys.argv[2], float(sys.argv[3])
deadline = time.monotonic() + limit
url = f"http://127.0.0.1:8888/api/status?token={token}"
while time.monotonic() < deadline:
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            if reply.status == 200:
                up = float(open("/proc/uptime").read().split()[0])
                print(f"answered 200 at uptime {up:.1f} s ({up - start:.1f} s after asking)")
                sys.exit(0)
    except OSError as err:
        last = err
    time.sleep(2)
print(f"no answer within {limit:.0f} s")
sys.exit(1)
PY
