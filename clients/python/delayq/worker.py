"""A worker: runs a handler for each job of a topic, over the HTTP API.

    def send_mail(job):
        smtp_send(job.json())
        return b"sent"            # the job's result (kept with keep_for_ms)

    Worker(Client(url), "mail", send_mail, concurrency=4).run_until_signal()

Each of `concurrency` threads long-polls `reserve` for one job, runs the
handler, and acks with what the handler returned, or fails the job with
the text of the exception it raised (the job then runs again after its
backoff, or goes dead on its last attempt). A successful ack also takes
the next ready job in the same request (ack_and_reserve), so a busy worker
makes one request per job. The leases are held under the worker's `name`
(the server's workers view), by default "host:pid". While the handler runs, the
lease is touched every `touch_fraction` of the job's ttr so that a long job
is not handed to another worker. stop() takes no more jobs, gives back (
release) a job reserved after it was called, and waits for the running
handlers: no job is lost, and none is left reserved by this worker.
"""

import logging
import os
import re
import signal
import socket
import threading
from typing import Callable, Optional, Union

from .client import Client, Job, Lease
from .errors import DelayqError, FailedPreconditionError

log = logging.getLogger("delayq")

Handler = Callable[[Job], Optional[Union[str, bytes]]]


def default_name() -> str:
    """"host:pid", as the server takes a worker's name: printable ASCII
    without spaces, at most 128 characters."""
    host = re.sub(r"[^!-~]", "_", socket.gethostname()) or "host"
    return f"{host[:100]}:{os.getpid()}"


class _Heartbeat:
    """Touches a lease every `interval` seconds until stopped."""

    def __init__(self, client: Client, lease: Lease, interval: float):
        self._client = client
        self._lease = lease
        self._interval = interval
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._done.wait(self._interval):
            try:
                self._client.touch(self._lease)
            except FailedPreconditionError:
                # The lease is gone (cancelled, or taken over after it ran
                # out): the ack will be refused as stale.
                log.warning("lease of job %s is lost", self._lease.job.id)
                return
            except DelayqError as e:
                log.warning("touch of job %s failed: %s", self._lease.job.id, e)

    def stop(self):
        self._done.set()
        self._thread.join()


class Worker:
    def __init__(
        self,
        client: Client,
        topic: str,
        handler: Handler,
        concurrency: int = 1,
        wait_ms: int = 5000,
        touch_fraction: float = 0.5,
        error_pause: float = 1.0,
        name: Optional[str] = None,
    ):
        """`wait_ms` is each long poll's wait; `error_pause` the pause after
        a failed reserve (the server or store down) before the next; `name`
        who holds the leases (default_name() without it)."""
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if not 0 < touch_fraction < 1:
            raise ValueError("touch_fraction must be between 0 and 1")
        self.client = client
        self.topic = topic
        self.handler = handler
        self.concurrency = concurrency
        self.wait_ms = wait_ms
        self.touch_fraction = touch_fraction
        self.error_pause = error_pause
        self.name = name if name is not None else default_name()
        self._stopping = threading.Event()
        self._threads = []

    def start(self) -> "Worker":
        if self._threads:
            raise RuntimeError("the worker has started already")
        for i in range(self.concurrency):
            t = threading.Thread(target=self._loop, name=f"delayq-worker-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def stop(self, timeout: Optional[float] = None) -> bool:
        """Takes no more jobs and waits for the running ones (at most
        `timeout` seconds, None: as long as they take). True when every
        thread ended."""
        self._stopping.set()
        for t in self._threads:
            t.join(timeout)
        return not any(t.is_alive() for t in self._threads)

    def run_until_signal(self, signals=(signal.SIGTERM, signal.SIGINT)) -> None:
        """Runs until one of `signals` arrives, then stops gracefully. Call
        it from the main thread (Python handles signals there only)."""
        stop = threading.Event()
        previous = {s: signal.signal(s, lambda *_: stop.set()) for s in signals}
        try:
            self.start()
            while not stop.wait(0.2):
                pass
            log.info("stopping: waiting for running jobs")
            self.stop()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    def _loop(self):
        lease = None  # the next job, when an ack brought it
        while not self._stopping.is_set():
            if lease is None:
                try:
                    leases = self.client.reserve(
                        self.topic, wait_ms=self.wait_ms, max=1, worker=self.name)
                except DelayqError as e:
                    log.warning("reserve from %s failed: %s", self.topic, e)
                    self._stopping.wait(self.error_pause)
                    continue
                if not leases:
                    continue
                lease = leases[0]
            if self._stopping.is_set():
                break
            lease = self._run(lease)
        if lease is not None:
            self._give_back(lease)

    def _give_back(self, lease: Lease):
        try:
            self.client.release(lease)
        except DelayqError as e:
            # It comes back after its ttr all the same.
            log.warning("release of job %s failed: %s", lease.job.id, e)

    def _run(self, lease: Lease) -> Optional[Lease]:
        """Runs the handler and finishes the job; returns the next job's
        lease when the ack brought one."""
        interval = max(0.01, lease.job.ttr_ms / 1000.0 * self.touch_fraction)
        heartbeat = _Heartbeat(self.client, lease, interval)
        try:
            result = self.handler(lease.job)
            error = None
        except Exception as e:  # the handler's failure is the job's
            result = None
            error = f"{type(e).__name__}: {e}"
        finally:
            heartbeat.stop()
        try:
            if error is not None:
                self.client.fail(lease, error)
                return None
            if self._stopping.is_set():
                self.client.ack(lease, result)
                return None
            # wait_ms=0: with nothing ready the loop's long poll waits.
            step = self.client.ack_and_reserve(
                lease, self.topic, wait_ms=0, result=result, worker=self.name)
        except DelayqError as e:
            log.warning("finishing job %s failed: %s", lease.job.id, e)
            return self._ack_again(lease, result)
        if step.ack_error is not None:
            log.warning("finishing job %s failed: %s", lease.job.id, step.ack_error)
        if step.reserve_error is not None:
            log.warning("reserve from %s failed: %s", self.topic, step.reserve_error)
        return step.lease

    def _ack_again(self, lease: Lease, result) -> None:
        """After an ack_and_reserve whose reply was lost: the plain ack, which
        the client repeats on its own. Refused as stale when the first one
        took; a next job the lost reply held comes back after its ttr."""
        try:
            self.client.ack(lease, result)
        except FailedPreconditionError:
            pass
        except DelayqError as e:
            log.warning("finishing job %s failed: %s", lease.job.id, e)
        return None
