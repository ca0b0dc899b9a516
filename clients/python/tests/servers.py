"""Real servers for the client's tests: `delayq serve` on a store, and a
redis-server of the test's own, each on a free port and stopped after.

The delayq program is $DELAYQ_BIN (the Bazel test sets it), else `delayq`
on $PATH. A missing program or redis-server fails the test: nothing is
skipped.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def delayq_program():
    path = os.environ.get("DELAYQ_BIN") or shutil.which("delayq")
    if not path:
        raise RuntimeError("no delayq program: set DELAYQ_BIN or put delayq on PATH")
    return os.path.abspath(path)


class RedisServer:
    def __init__(self):
        program = shutil.which("redis-server") or "/usr/bin/redis-server"
        if not os.access(program, os.X_OK):
            raise RuntimeError("redis-server is not installed")
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="delayq-py-redis-")
        self.process = subprocess.Popen(
            [program, "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", self.dir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.02)
        self.stop()
        raise RuntimeError("redis-server did not start")

    def url(self, namespace):
        return f"redis://127.0.0.1:{self.port}?namespace={namespace}"

    def stop(self):
        self.process.kill()
        self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class DelayqServer:
    """`delayq serve --store URL` on a free port; `url` is its address."""

    def __init__(self, store_url, *extra_args):
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [delayq_program(), "serve", "--store", store_url,
             "--listen", "127.0.0.1:0", *extra_args],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            self.log.seek(0)
            found = re.search(rb"listening on (http://[0-9.:]+)", self.log.read())
            if found:
                self.url = found.group(1).decode()
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.02)
        self.log.seek(0)
        said = self.log.read().decode(errors="replace")
        self.stop()
        raise RuntimeError("delayq serve did not start: " + said)

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
