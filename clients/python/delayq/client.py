"""A client of the delayq HTTP API (`delayq serve`), standard library only.

    client = Client("http://127.0.0.1:7070")
    job_id = client.enqueue("mail", b'{"to": "ann@example.com"}', delay_ms=30_000)
    for lease in client.reserve("mail", wait_ms=5000):
        ...
        client.ack(lease)

Every call maps the server's error reply to the class of its code
(errors.py). Calls that are safe to repeat are tried again, with backoff,
when the server answers 503 or cannot be reached (see Client.__init__).
"""

import base64
import datetime
import json
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union

from .errors import ConnectionFailedError, UnavailableError, error_from_reply

Payload = Union[str, bytes]

# The JobOptions fields the API takes (docs/openapi.yaml), by keyword.
JOB_OPTIONS = (
    "id",
    "delay_ms",
    "run_at",
    "ttr_ms",
    "priority",
    "max_attempts",
    "backoff",
    "replace",
    "expire_at",
    "expire_after_ms",
    "discard_expired",
    "unique_for_ms",
    "keep_for_ms",
    "keep_at_most",
    "after",
    "on_dependency_failure",
)
_TIME_OPTIONS = ("run_at", "expire_at")


def _rfc3339(value):
    """A datetime (naive means UTC) or a string, as the API writes times."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        value = value.astimezone(datetime.timezone.utc)
        return value.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return str(value)


def _bytes_field(obj, name):
    """`name` or `name_base64` of a reply object, as bytes (None if absent)."""
    if name in obj:
        return obj[name].encode("utf-8")
    if name + "_base64" in obj:
        return base64.b64decode(obj[name + "_base64"])
    return None


def _put_bytes(body, name, value):
    """Sets `name` (text) or `name_base64` (bytes that are not UTF-8)."""
    if isinstance(value, str):
        body[name] = value
        return
    try:
        body[name] = bytes(value).decode("utf-8")
    except UnicodeDecodeError:
        body[name + "_base64"] = base64.b64encode(value).decode("ascii")


@dataclass
class Job:
    """A job as the server shows it; `payload` and `result` are bytes."""

    id: str
    topic: str
    state: str
    payload: bytes
    attempts: int = 0
    max_attempts: int = 0
    priority: int = 0
    ttr_ms: int = 0
    last_error: str = ""
    result: Optional[bytes] = None
    # The ids of the jobs it was enqueued to wait for, in their order.
    after: List[str] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, obj):
        return cls(
            id=obj["id"],
            topic=obj.get("topic", ""),
            state=obj.get("state", ""),
            payload=_bytes_field(obj, "payload") or b"",
            attempts=obj.get("attempts", 0),
            max_attempts=obj.get("max_attempts", 0),
            priority=obj.get("priority", 0),
            ttr_ms=obj.get("ttr_ms", 0),
            last_error=obj.get("last_error", ""),
            result=_bytes_field(obj, "result"),
            after=list(obj.get("after", [])),
            raw=obj,
        )

    def text(self):
        """The payload as UTF-8 text."""
        return self.payload.decode("utf-8")

    def json(self):
        """The payload parsed as JSON."""
        return json.loads(self.payload)

    def __getattr__(self, name):
        # Every other field of the reply (run_at, deadline, finished_at,
        # expire_at, keep_for_ms, ...), as the server wrote it.
        raw = self.__dict__.get("raw", {})
        if name in raw:
            return raw[name]
        raise AttributeError(name)


@dataclass
class JobPage:
    """One page of a job list (Client.list_page()): `next_cursor` gives the
    next page, and is "" once this page ends the list."""

    jobs: List[Job]
    next_cursor: str


@dataclass
class Lease:
    """A reservation: the job, its fencing token and when the lease ends.

    `dependency_results` holds the results the job's dependencies (`after`)
    left at their ack, id -> bytes: one for each dependency kept done
    (`keep_for_ms`) when the job was reserved; a dependency whose result was
    not kept has none."""

    job: Job
    token: str
    deadline: str
    dependency_results: Dict[str, bytes] = field(default_factory=dict)

    @classmethod
    def from_json(cls, obj):
        results = {}
        for entry in obj.get("dependency_results", []):
            results[entry["id"]] = _bytes_field(entry, "result") or b""
        return cls(Job.from_json(obj["job"]), str(obj["token"]), obj["deadline"],
                   results)


@dataclass
class AckedAndNext:
    """What ack_and_reserve() did: the ack, and the next job's lease."""

    acked: bool
    ack_error: Optional[Exception]
    lease: Optional[Lease]
    reserve_error: Optional[Exception]


class Client:
    def __init__(
        self,
        url: str = "http://127.0.0.1:7070",
        token: Optional[str] = None,
        timeout: float = 30.0,
        retries: int = 3,
        retry_backoff: float = 0.1,
    ):
        """`token` is the server's --token-file secret, when it has one.

        `timeout` bounds each request (a long poll adds its wait to it).
        Calls safe to repeat are tried up to `retries` more times after a
        503 or a failed connection, waiting `retry_backoff` seconds, then
        twice that, and so on (with jitter, at most 5 s). Safe to repeat:
        reads; setting or removing a limit or schedule; pause and resume;
        an enqueue with an id (a repeat of one that was stored is refused
        with AlreadyExistsError, never stored twice); ack, fail, release
        and touch (the lease's fencing token makes a repeat change nothing,
        though a repeat of one that went through is then refused as stale).
        Not repeated: an enqueue without an id (it could be stored twice),
        reserve (a lost reply's lease would wait out its ttr), cancel,
        kick, purge, retry and promote.
        """
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.retry_backoff = retry_backoff

    # --- the wire -------------------------------------------------------

    def _once(self, method, path, body, timeout):
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        request = urllib.request.Request(
            self.url + path, data=data, method=method, headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as reply:
                text = reply.read()
                return json.loads(text) if text else {}
        except urllib.error.HTTPError as e:
            with e:
                text = e.read()
            try:
                parsed = json.loads(text) if text else None
            except ValueError:
                parsed = None
            raise error_from_reply(e.code, parsed) from None
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise ConnectionFailedError(
                f"cannot reach {self.url}: {reason}", code="UNAVAILABLE"
            ) from None

    def _call(self, method, path, body=None, repeat=False, extra_timeout=0.0):
        attempt = 0
        while True:
            try:
                return self._once(method, path, body, self.timeout + extra_timeout)
            except UnavailableError:
                if not repeat or attempt >= self.retries:
                    raise
            pause = min(5.0, self.retry_backoff * (2**attempt))
            time.sleep(pause * (0.5 + random.random() / 2))
            attempt += 1

    @staticmethod
    def _quote(part):
        return urllib.parse.quote(str(part), safe="")

    # --- jobs -----------------------------------------------------------

    @staticmethod
    def _options(options):
        unknown = sorted(set(options) - set(JOB_OPTIONS))
        if unknown:
            raise TypeError(f"unknown job option(s): {', '.join(unknown)}")
        body = {}
        for name, value in options.items():
            if value is None:
                continue
            body[name] = _rfc3339(value) if name in _TIME_OPTIONS else value
        return body

    def enqueue(self, topic: str, payload: Payload = b"", **options) -> str:
        """Adds a job; returns its id. Options are JOB_OPTIONS, by name."""
        body = self._options(options)
        _put_bytes(body, "payload", payload)
        reply = self._call(
            "POST",
            f"/v1/topics/{self._quote(topic)}/jobs",
            body,
            repeat=bool(body.get("id")),
        )
        return reply["id"]

    def enqueue_batch(self, topic: str, payloads: List[Payload], **options) -> List[str]:
        """Adds many jobs with the same options in one store call."""
        body = self._options(options)
        items = [p.encode("utf-8") if isinstance(p, str) else bytes(p) for p in payloads]
        try:
            body["payloads"] = [p.decode("utf-8") for p in items]
        except UnicodeDecodeError:
            body["payloads_base64"] = [base64.b64encode(p).decode("ascii") for p in items]
        reply = self._call("POST", f"/v1/topics/{self._quote(topic)}/jobs/batch", body)
        return reply["ids"]

    def enqueue_flow(self, jobs: List[Dict[str, Any]]) -> List[str]:
        """Adds jobs of any topics that wait for each other, all or nothing,
        in one store call; returns their ids in the order given. Each job is
        a dict with "topic", "payload" and any of JOB_OPTIONS; its "after"
        may name jobs of the flow by their "id", in any order."""
        items = []
        for job in jobs:
            job = dict(job)
            topic = job.pop("topic")
            payload = job.pop("payload", b"")
            item = self._options(job)
            item["topic"] = topic
            _put_bytes(item, "payload", payload)
            items.append(item)
        return self._call("POST", "/v1/flows", {"jobs": items})["ids"]

    def get(self, job_id: str, wait: Optional[str] = None) -> Job:
        """The job; with `wait` (e.g. "30s", at most 60s) once it finishes."""
        path = f"/v1/jobs/{self._quote(job_id)}"
        extra = 0.0
        if wait:
            path += "?wait=" + urllib.parse.quote(wait)
            extra = 61.0
        return Job.from_json(self._call("GET", path, repeat=True, extra_timeout=extra))

    def list(self, topic: str, state: str = "ready", limit: int = 100) -> List[Job]:
        query = urllib.parse.urlencode({"state": state, "limit": limit})
        reply = self._call("GET", f"/v1/topics/{self._quote(topic)}/jobs?{query}", repeat=True)
        return [Job.from_json(j) for j in reply["jobs"]]

    def list_page(self, topic: str, state: str = "ready", limit: int = 100,
                  cursor: str = "") -> JobPage:
        """One page of list(): the jobs after `cursor` (the next_cursor of
        the previous page; "" for the first). A job that stays in the state
        while the pages are read is seen exactly once; one that enters,
        leaves or moves meanwhile may be seen once, twice or not at all."""
        params = {"state": state, "limit": limit}
        if cursor:
            params["cursor"] = cursor
        query = urllib.parse.urlencode(params)
        reply = self._call("GET", f"/v1/topics/{self._quote(topic)}/jobs?{query}", repeat=True)
        return JobPage([Job.from_json(j) for j in reply["jobs"]], reply.get("next_cursor", ""))

    def workers(self, limit: int = 100, cursor: str = "") -> Dict[str, Any]:
        """Live leases with who holds them and since when, a page at a
        time: {"leases": [{"holder", "topic", "id", "reserved_at",
        "deadline", "attempts", "max_attempts"}, ...], "next_cursor": ...}
        ("" at the end)."""
        params: Dict[str, Any] = {"limit": limit}
        if cursor:
            params["cursor"] = cursor
        query = urllib.parse.urlencode(params)
        return self._call("GET", f"/v1/workers?{query}", repeat=True)

    def history(self, job_id: str) -> List[Dict[str, Any]]:
        """The job's events from the store's event log, oldest first: each
        a dict with "event", "at", "attempts", "who" (the process that made
        it) and, for failures, "error"."""
        return self._call("GET", f"/v1/jobs/{self._quote(job_id)}/history", repeat=True)["events"]

    def cancel(self, job_id: str) -> None:
        self._call("DELETE", f"/v1/jobs/{self._quote(job_id)}")

    def retry(self, job_id: str) -> None:
        """Moves a dead job back to ready."""
        self._call("POST", f"/v1/jobs/{self._quote(job_id)}/retry")

    def promote(self, job_id: str) -> None:
        """Runs a delayed job now."""
        self._call("POST", f"/v1/jobs/{self._quote(job_id)}/promote")

    def bulk(self, action: str, job_ids: List[str]) -> Dict[str, Any]:
        """Cancels, retries or promotes (`action`) many jobs, up to 10,000, in
        one request; each id stands on its own, as with cancel(), retry() and
        promote(). {"done": N, "errors": [{"id", "code", "message"}]}."""
        if action not in ("cancel", "retry", "promote"):
            raise ValueError("action must be cancel, retry or promote")
        return self._call("POST", f"/v1/bulk/{action}", {"ids": list(job_ids)}, repeat=True)

    # --- leases ---------------------------------------------------------

    def reserve(self, topic: str, wait_ms: int = 0, max: int = 1,
                worker: Optional[str] = None) -> List[Lease]:
        """Leases up to `max` due jobs, waiting up to `wait_ms` for one;
        held by `worker` (see workers()), or by the server without it."""
        body: Dict[str, Any] = {"wait_ms": wait_ms, "max": max}
        if worker is not None:
            body["worker"] = worker
        reply = self._call(
            "POST",
            f"/v1/topics/{self._quote(topic)}/reserve",
            body,
            extra_timeout=wait_ms / 1000.0,
        )
        return [Lease.from_json(obj) for obj in reply["leases"]]

    def ack(self, lease: Lease, result: Optional[Payload] = None) -> None:
        """Done: the job leaves, or is kept done with `result` (keep_for_ms)."""
        body = {"token": lease.token}
        if result is not None:
            _put_bytes(body, "result", result)
        self._call("POST", f"/v1/jobs/{self._quote(lease.job.id)}/ack", body, repeat=True)

    def ack_and_reserve(
        self,
        lease: Lease,
        topic: str,
        wait_ms: int = 0,
        result: Optional[Payload] = None,
        worker: Optional[str] = None,
    ) -> AckedAndNext:
        """Acks the lease and reserves the next job of `topic` in one request,
        held by `worker` as in reserve().

        One store call where the store can: a consumer that takes one job at a
        time makes one request per job. A refused ack (a stale lease) does not
        stop the reservation. Not repeated: a repeat after a lost reply could
        lease a second job.
        """
        next_job: Dict[str, Any] = {"topic": topic, "wait_ms": wait_ms}
        if worker is not None:
            next_job["worker"] = worker
        body = {"token": lease.token, "next": next_job}
        if result is not None:
            _put_bytes(body, "result", result)
        reply = self._call(
            "POST",
            f"/v1/jobs/{self._quote(lease.job.id)}/ack",
            body,
            extra_timeout=wait_ms / 1000.0,
        )

        def error_of(obj):
            # Told inside a 200 reply: the error has no HTTP status of its own.
            return None if obj is None else error_from_reply(None, obj)

        leases = [Lease.from_json(obj) for obj in reply.get("leases", [])]
        return AckedAndNext(
            reply.get("acked") is True,
            error_of(reply.get("ack_error")),
            leases[0] if leases else None,
            error_of(reply.get("reserve_error")),
        )

    def ack_many(self, leases: List[Lease]) -> Dict[str, Any]:
        """Acks many leases in one store call; says which were not acked."""
        body = {"leases": [{"id": l.job.id, "token": l.token} for l in leases]}
        return self._call("POST", "/v1/leases/ack", body, repeat=True)

    def fail(self, lease: Lease, error: str = "") -> None:
        """Failed: runs again after its backoff, or dies on its last attempt."""
        body = {"token": lease.token, "error": error}
        self._call("POST", f"/v1/jobs/{self._quote(lease.job.id)}/fail", body, repeat=True)

    def release(self, lease: Lease, delay_ms: int = 0) -> None:
        """Gives the job back without using an attempt."""
        body = {"token": lease.token, "delay_ms": delay_ms}
        self._call("POST", f"/v1/jobs/{self._quote(lease.job.id)}/release", body, repeat=True)

    def touch(self, lease: Lease) -> str:
        """Extends the lease by the job's ttr; returns the new deadline."""
        reply = self._call(
            "POST",
            f"/v1/jobs/{self._quote(lease.job.id)}/touch",
            {"token": lease.token},
            repeat=True,
        )
        lease.deadline = reply["deadline"]
        return lease.deadline

    # --- topics ---------------------------------------------------------

    def topics(self) -> List[Dict[str, Any]]:
        return self._call("GET", "/v1/topics", repeat=True)["topics"]

    def stats(self, topic: str) -> Dict[str, Any]:
        return self._call("GET", f"/v1/topics/{self._quote(topic)}/stats", repeat=True)

    def kick(self, topic: str, max: Optional[int] = None) -> int:
        """Moves up to `max` (default all) dead jobs back to ready."""
        body = {} if max is None else {"max": max}
        return self._call("POST", f"/v1/topics/{self._quote(topic)}/kick", body)["kicked"]

    def purge(self, topic: str, state: str = "dead", max: Optional[int] = None) -> int:
        body = {"state": state}
        if max is not None:
            body["max"] = max
        return self._call("POST", f"/v1/topics/{self._quote(topic)}/purge", body)["purged"]

    def pause(self, topic: str) -> Dict[str, Any]:
        return self._call("POST", f"/v1/topics/{self._quote(topic)}/pause", repeat=True)

    def resume(self, topic: str) -> Dict[str, Any]:
        return self._call("POST", f"/v1/topics/{self._quote(topic)}/resume", repeat=True)

    def counts(self, minutes: Optional[int] = None, topic: Optional[str] = None) -> Dict[str, Any]:
        query = {}
        if minutes is not None:
            query["minutes"] = minutes
        if topic is not None:
            query["topic"] = topic
        path = "/v1/counts" + ("?" + urllib.parse.urlencode(query) if query else "")
        return self._call("GET", path, repeat=True)

    def metrics(self) -> str:
        """The Prometheus metrics, as text."""
        request = urllib.request.Request(self.url + "/metrics")
        if self.token:
            request.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as reply:
                return reply.read().decode("utf-8")
        except urllib.error.HTTPError as e:
            with e:
                raise error_from_reply(e.code, None) from None
        except (urllib.error.URLError, OSError) as e:
            raise ConnectionFailedError(f"cannot reach {self.url}: {e}") from None

    # --- limits and schedules -------------------------------------------

    def limits(self) -> List[Dict[str, Any]]:
        return self._call("GET", "/v1/limits", repeat=True)["limits"]

    def limit(self, topic: str) -> Dict[str, Any]:
        return self._call("GET", f"/v1/topics/{self._quote(topic)}/limit", repeat=True)

    def set_limit(self, topic: str, **limit) -> Dict[str, Any]:
        """rate, period_ms, burst, concurrency (see the API)."""
        return self._call("PUT", f"/v1/topics/{self._quote(topic)}/limit", limit, repeat=True)

    def clear_limit(self, topic: str) -> None:
        self._call("DELETE", f"/v1/topics/{self._quote(topic)}/limit", repeat=True)

    def schedules(self) -> List[Dict[str, Any]]:
        return self._call("GET", "/v1/schedules", repeat=True)["schedules"]

    def schedule(self, name: str) -> Dict[str, Any]:
        return self._call("GET", f"/v1/schedules/{self._quote(name)}", repeat=True)

    def put_schedule(self, name: str, spec: str, topic: str, payload: Payload = b"", **fields) -> Dict[str, Any]:
        """time_zone, missed, jitter_ms, priority, ttr_ms, max_attempts, backoff."""
        body = dict(fields, spec=spec, topic=topic)
        _put_bytes(body, "payload", payload)
        return self._call("PUT", f"/v1/schedules/{self._quote(name)}", body, repeat=True)

    def delete_schedule(self, name: str) -> None:
        self._call("DELETE", f"/v1/schedules/{self._quote(name)}", repeat=True)
