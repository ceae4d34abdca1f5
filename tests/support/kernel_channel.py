"""A notebook's kernel driven as JupyterLab drives it: started with the server's REST API,
spoken to on its websocket (Jupyter's messaging protocol 5.3). Used by the tests of a lab
started as a student starts it (tests/deploy/test_lab_container.py, tests/instructor/test_edition_lab.py).
"""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from typing import Any, Dict, Optional, Tuple

import websocket

SESSION = uuid.uuid4().hex


def kernel_message(msg_type: str, content: Dict[str, Any]) -> Dict[str, Any]:
    """A message of Jupyter's protocol as JupyterLab sends it on a kernel's websocket."""
    return {"header": {"msg_id": uuid.uuid4().hex, "session": SESSION, "username": "",
                       "msg_type": msg_type, "version": "5.3"},
            "parent_header": {}, "metadata": {}, "content": content, "channel": "shell",
            "buffers": []}


def ask(ws: Any, msg_type: str, content: Dict[str, Any], timeout_s: float
        ) -> Tuple[Optional[Dict[str, Any]], str]:
    """Send one shell request; its reply (None when none came in time) and the text its
    cell printed."""
    sent = kernel_message(msg_type, content)
    ws.send(json.dumps(sent))
    deadline, printed = time.monotonic() + timeout_s, []
    while time.monotonic() < deadline:
        ws.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            msg = json.loads(ws.recv())
        except websocket.WebSocketTimeoutException:
            break
        if msg.get("parent_header", {}).get("msg_id") != sent["header"]["msg_id"]:
            continue
        if msg["msg_type"] == "stream":
            printed.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            printed.append("\n".join(msg["content"]["traceback"]))
        elif msg["channel"] == "shell":
            return msg, "".join(printed)
    return None, "".join(printed)


def execute(ws: Any, code: str, timeout_s: float) -> Tuple[Optional[Dict[str, Any]], str]:
    """Run ``code`` as a cell; its reply (None when none came in time) and what it printed."""
    return ask(ws, "execute_request", {
        "code": code, "silent": False, "store_history": False, "user_expressions": {},
        "allow_stdin": False, "stop_on_error": True}, timeout_s)


def start_kernel(base: str, token: str) -> str:
    """A new python3 kernel on the server at ``base`` (http://host:port); its id."""
    request = urllib.request.Request(f"{base}/api/kernels?token={token}", method="POST",
                                     data=b'{"name": "python3"}',
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as reply:
        return str(json.loads(reply.read())["id"])


def open_notebook(base: str, token: str, path: str) -> str:
    """A kernel for the notebook at ``path`` (relative to the server's root), as JupyterLab
    starts one when a student opens it (the kernel works in the notebook's folder); its id."""
    body = json.dumps({"path": path, "type": "notebook", "name": path.rsplit("/", 1)[-1],
                       "kernel": {"name": "python3"}}).encode()
    request = urllib.request.Request(f"{base}/api/sessions?token={token}", method="POST",
                                     data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as reply:
        return str(json.loads(reply.read())["kernel"]["id"])


def channels(base: str, token: str, kernel: str, timeout_s: float) -> Any:
    """The kernel's websocket (the server opens it once the kernel answers)."""
    return websocket.create_connection(
        f"{base.replace('http', 'ws')}/api/kernels/{kernel}/channels?token={token}",
        timeout=timeout_s)


def stop_kernel(base: str, token: str, kernel: str) -> None:
    """Shut the kernel down."""
    urllib.request.urlopen(urllib.request.Request(
        f"{base}/api/kernels/{kernel}?token={token}", method="DELETE"), timeout=60)


def delayed_ping_code(spec: str, results: str) -> str:
    """A cell's code: the lab ``spec`` (with link delay) built, three pings h1 -> h2 saved in
    ``results`` (relative to the kernel's folder); ``ping`` holds their result."""
    return ("from labtools.lab import probes\nfrom labtools.lab.session import LabSession\n"
            f"with LabSession({spec!r}, results={results!r}, calibrate=False) as lab:\n"
            "    ping = probes.ping(lab, 'h1', 'h2', count=3, interval_s=0.2)\n")
