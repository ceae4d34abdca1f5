"""The process Jupyter starts as a kernel while nbgrader grades: it asks the kernel fork
server (:mod:`labtools.instructor.kernel_forks`) for a kernel forked from one that has already
imported what the labs import, and stands in for it until it ends.

Run by path with ``python -S``: ``kernel_fork_client.py SOCKET -m ipykernel_launcher -f
CONNECTION_FILE ...``. It hands the server its working folder, its environment and its
standard input, output and error; passes on every signal it gets (Jupyter interrupts a
kernel with SIGINT, stops it with SIGTERM); and exits with the kernel's exit status. Killed
itself, its connection closes and the server kills the kernel. When no server answers it
becomes the ordinary kernel (``python -m ipykernel_launcher ...``).

It imports nothing of the kit and starts in milliseconds.
"""

import json
import os
import signal
import socket
import sys
from typing import List

#: the signals passed on to the kernel
PASSED_ON = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT,
             signal.SIGUSR1, signal.SIGUSR2)
#: largest message from the server, in bytes
MESSAGE_BYTES = 4096


def main(argv: List[str]) -> None:
    """``argv``: SOCKET, then the kernel's own arguments after the Python executable."""
    path, kernel_argv = argv[0], argv[1:]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.connect(path)
        request = {"argv": kernel_argv, "cwd": os.getcwd(), "env": dict(os.environ)}
        socket.send_fds(sock, [json.dumps(request).encode()], [0, 1, 2])
    except OSError:
        sock.close()
        os.execv(sys.executable, [sys.executable, *kernel_argv])
    for signum in PASSED_ON:
        signal.signal(signum, lambda n, _frame: sock.send(json.dumps({"signal": n}).encode()))
    while True:
        message = sock.recv(MESSAGE_BYTES)
        if not message:
            os._exit(1)  # the server is gone, and its kernels with it
        said = json.loads(message)
        if "exit" in said:
            os._exit(int(said["exit"]))


if __name__ == "__main__":
    main(sys.argv[1:])
