"""The Python client against a real `delayq serve`, on SQLite and on Redis.

Run: DELAYQ_BIN=path/to/delayq python3 -m unittest discover -s clients/python/tests
(`bazel test //clients/python:client_test` sets DELAYQ_BIN itself).
"""

import datetime
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import delayq  # noqa: E402
from servers import DelayqServer, RedisServer, delayq_program, free_port  # noqa: E402


def wait_until(predicate, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


class ClientSuite:
    """The cases every store runs; subclasses say which store."""

    def store_url(self):
        raise NotImplementedError

    def setUp(self):
        self.store = self.store_url()
        self.server = DelayqServer(self.store)
        self.client = delayq.Client(self.server.url)

    def tearDown(self):
        self.server.stop()

    # --- jobs -------------------------------------------------------------

    def test_enqueue_takes_every_option_and_get_shows_them(self):
        job_id = self.client.enqueue(
            "orders", "42", id="order-42", delay_ms=3_600_000, ttr_ms=5000,
            priority=-3, max_attempts=7, backoff="fixed:5s",
            expire_at=datetime.datetime(2099, 1, 2, 3, 4, 5),
            discard_expired=True, unique_for_ms=60_000, keep_for_ms=1000,
            keep_at_most=5)
        self.assertEqual(job_id, "order-42")
        job = self.client.get("order-42")
        self.assertEqual(job.state, "delayed")
        self.assertEqual(job.text(), "42")
        self.assertEqual((job.ttr_ms, job.priority, job.max_attempts), (5000, -3, 7))
        self.assertEqual(job.backoff, "fixed:5s")
        self.assertEqual(job.expire_at, "2099-01-02T03:04:05.000Z")
        self.assertEqual(job.discard_expired, True)
        self.assertEqual(job.unique_for_ms, 60_000)
        self.assertEqual((job.keep_for_ms, job.keep_at_most), (1000, 5))
        at = self.client.enqueue("orders", b"x", run_at="2099-01-02T03:04:05Z")
        self.assertEqual(self.client.get(at).run_at, "2099-01-02T03:04:05.000Z")
        self.client.cancel("order-42")
        with self.assertRaises(delayq.NotFoundError):
            self.client.get("order-42")
        # Its dedup window holds the id.
        with self.assertRaises(delayq.AlreadyExistsError):
            self.client.enqueue("orders", "again", id="order-42")

    def test_errors_are_typed(self):
        self.client.enqueue("t", "a", id="one")
        with self.assertRaises(delayq.AlreadyExistsError) as e:
            self.client.enqueue("t", "b", id="one")
        self.assertEqual(e.exception.status, 409)
        with self.assertRaises(delayq.InvalidArgumentError) as e:
            self.client.enqueue("t", "b", max_attempts=0)
        self.assertIn("max_attempts", e.exception.message)
        with self.assertRaises(delayq.NotFoundError):
            self.client.retry("nope")
        with self.assertRaises(delayq.FailedPreconditionError):
            self.client.retry("one")  # ready, not dead
        with self.assertRaises(TypeError):
            self.client.enqueue("t", "b", priorty=1)
        lease = self.client.reserve("t")[0]
        stale = delayq.Lease(lease.job, str(int(lease.token) + 1), lease.deadline)
        with self.assertRaises(delayq.FailedPreconditionError):
            self.client.ack(stale)
        self.client.ack(lease)

    def test_payloads_travel_as_bytes_and_text(self):
        ids = self.client.enqueue_batch("bin", [b"\x00\xff", "caf\u00e9"])
        self.assertEqual(len(ids), 2)
        jobs = self.client.list("bin")
        self.assertEqual([j.payload for j in jobs], [b"\x00\xff", "caf\u00e9".encode()])
        text_ids = self.client.enqueue_batch("txt", ["a", "b"], priority=2)
        self.assertEqual([j.id for j in self.client.list("txt")], text_ids)
        self.assertEqual(self.client.get(text_ids[0]).priority, 2)

    def test_workers_shows_a_live_lease_with_its_holder(self):
        job_id = self.client.enqueue("held", "x")
        lease = self.client.reserve("held", wait_ms=2000, worker="py-test:1")[0]
        leases = self.client.workers(limit=1000)["leases"]
        mine = [l for l in leases if l["id"] == job_id]
        self.assertEqual(len(mine), 1)
        self.assertEqual(mine[0]["topic"], "held")
        self.assertEqual(mine[0]["holder"], "py-test:1")
        self.assertTrue(mine[0]["reserved_at"])
        self.client.ack(lease)

    def test_list_pages_follow_their_cursor(self):
        ids = self.client.enqueue_batch("pages", ["a", "b", "c", "d", "e"])
        seen, cursor, pages = [], "", 0
        while True:
            page = self.client.list_page("pages", limit=2, cursor=cursor)
            seen += [j.id for j in page.jobs]
            pages += 1
            cursor = page.next_cursor
            if not cursor or pages > 10:
                break
        self.assertEqual(pages, 3)
        self.assertEqual(seen, ids)
        with self.assertRaises(delayq.InvalidArgumentError):
            self.client.list_page("pages", cursor="nonsense")

    # --- leases -----------------------------------------------------------

    def test_reserve_touch_release_fail_kick_purge(self):
        self.client.enqueue("work", "p", id="w1", max_attempts=2, backoff="fixed:1ms")
        self.assertEqual(self.client.reserve("empty", wait_ms=10), [])
        lease = self.client.reserve("work", wait_ms=1000)[0]
        self.assertEqual((lease.job.id, lease.job.attempts), ("w1", 1))
        before = lease.deadline
        time.sleep(0.01)
        self.assertGreaterEqual(self.client.touch(lease), before)
        self.client.release(lease)
        self.assertEqual(self.client.get("w1").state, "ready")
        lease = self.client.reserve("work", wait_ms=1000)[0]
        self.client.fail(lease, "first")
        lease = self.client.reserve("work", wait_ms=2000)[0]
        self.client.fail(lease, "second")
        dead = self.client.get("w1")
        self.assertEqual((dead.state, dead.last_error), ("dead", "second"))
        self.assertEqual(self.client.kick("work"), 1)
        lease = self.client.reserve("work", wait_ms=1000)[0]
        for i in range(lease.job.attempts, lease.job.max_attempts):
            self.client.fail(lease, "again")
            lease = self.client.reserve("work", wait_ms=2000)[0]
        self.client.fail(lease, "last")
        self.assertEqual(self.client.stats("work")["dead"], 1)
        self.assertEqual(self.client.purge("work"), 1)
        self.assertEqual(self.client.stats("work")["dead"], 0)

    def test_ack_and_reserve_takes_the_next_job_in_one_request(self):
        first = self.client.enqueue("chain", "1")
        second = self.client.enqueue("chain", "2")
        lease = self.client.reserve("chain")[0]
        self.assertEqual(lease.job.id, first)
        step = self.client.ack_and_reserve(lease, "chain")
        self.assertTrue(step.acked)
        self.assertIsNone(step.ack_error)
        self.assertEqual(step.lease.job.id, second)
        stale = self.client.ack_and_reserve(lease, "chain")
        self.assertFalse(stale.acked)
        self.assertIsInstance(stale.ack_error, delayq.FailedPreconditionError)
        self.assertIsNone(stale.lease)
        last = self.client.ack_and_reserve(step.lease, "chain", wait_ms=0)
        self.assertTrue(last.acked)
        self.assertIsNone(last.lease)
        self.assertEqual(self.client.stats("chain")["reserved"], 0)

    def test_ack_many_and_promote(self):
        for i in range(3):
            self.client.enqueue("many", str(i))
        leases = self.client.reserve("many", max=3)
        self.assertEqual(len(leases), 3)
        self.assertEqual(self.client.ack_many(leases)["acked"], 3)
        later = self.client.enqueue("many", "later", delay_ms=3_600_000)
        self.client.promote(later)
        self.assertEqual(self.client.get(later).state, "ready")

    def test_a_flow_is_enqueued_at_once_parent_first(self):
        flow = [
            {"topic": "flow", "payload": "publish", "id": "f-parent", "after": ["f-child"],
             "on_dependency_failure": "cancel"},
            {"topic": "flow", "payload": b"\x00\xff", "id": "f-child"},
        ]
        ids = self.client.enqueue_flow(flow)
        self.assertEqual(ids, ["f-parent", "f-child"])
        self.assertEqual(self.client.get("f-parent").state, "waiting")
        lease = self.client.reserve("flow", wait_ms=2000)[0]
        self.assertEqual((lease.job.id, lease.job.payload), ("f-child", b"\x00\xff"))
        self.client.ack(lease)
        self.assertEqual(self.client.reserve("flow", wait_ms=2000)[0].job.id, "f-parent")
        with self.assertRaises(delayq.InvalidArgumentError):
            self.client.enqueue_flow([{"topic": "flow", "payload": "a", "id": "a", "after": ["a"]}])

    def test_bulk_acts_on_many_ids_and_says_which_failed(self):
        later = [self.client.enqueue("bulk", str(i), delay_ms=3_600_000) for i in range(3)]
        promoted = self.client.bulk("promote", later + ["no-such-job"])
        self.assertEqual(promoted["done"], 3)
        self.assertEqual([(e["id"], e["code"]) for e in promoted["errors"]],
                         [("no-such-job", "NOT_FOUND")])
        self.assertEqual(self.client.stats("bulk")["ready"], 3)
        self.assertEqual(self.client.bulk("cancel", later)["done"], 3)
        with self.assertRaises(ValueError):
            self.client.bulk("delete", later)

    def test_result_is_kept_and_waited_for(self):
        job_id = self.client.enqueue("calc", "6*7", keep_for_ms=60_000)
        lease = self.client.reserve("calc")[0]
        threading.Timer(0.2, lambda: self.client.ack(lease, b"42")).start()
        done = self.client.get(job_id, wait="10s")
        self.assertEqual((done.state, done.result), ("done", b"42"))
        self.assertEqual([j.id for j in self.client.list("calc", state="done")], [job_id])

    def test_a_lease_carries_the_results_its_dependencies_left(self):
        dep = self.client.enqueue("render", "page", keep_for_ms=60_000)
        child = self.client.enqueue("mail", "send", after=[dep])
        waiting = self.client.get(child)
        self.assertEqual((waiting.state, waiting.after), ("waiting", [dep]))
        self.assertEqual(self.client.get(dep).after, [])
        self.client.ack(self.client.reserve("render")[0], b"\xff pdf")
        lease = self.client.reserve("mail")[0]
        self.assertEqual((lease.job.id, lease.job.after), (child, [dep]))
        self.assertEqual(lease.dependency_results, {dep: b"\xff pdf"})

    # --- topics, limits, schedules ---------------------------------------

    def test_topics_stats_pause_resume_and_counts(self):
        self.client.enqueue("t1", "a")
        self.assertTrue(self.client.pause("t1")["paused"])
        self.assertEqual(self.client.reserve("t1"), [])
        self.assertEqual([t["topic"] for t in self.client.topics()], ["t1"])
        self.assertFalse(self.client.resume("t1")["paused"])
        self.client.ack(self.client.reserve("t1")[0])
        counts = self.client.counts(minutes=5, topic="t1")
        self.assertEqual(sum(m["done"] for m in counts["minutes"]), 1)
        self.assertIn('delayq_store_transitions_total{topic="t1",transition="done"} 1',
                      self.client.metrics())

    def test_limits_and_schedules(self):
        limit = self.client.set_limit("mail", rate=50, concurrency=10)
        self.assertEqual(limit["text"], "rate 50/1s, concurrency 10")
        self.assertEqual([l["topic"] for l in self.client.limits()], ["mail"])
        self.assertEqual(self.client.limit("mail")["concurrency"], 10)
        self.client.clear_limit("mail")
        self.assertEqual(self.client.limits(), [])
        stored = self.client.put_schedule("report.nightly", "0 3 * * *", "reports", "{}",
                                          time_zone="Europe/Berlin")
        self.assertEqual(stored["time_zone"], "Europe/Berlin")
        self.assertEqual([s["name"] for s in self.client.schedules()], ["report.nightly"])
        self.assertEqual(self.client.schedule("report.nightly")["spec"], "0 3 * * *")
        self.client.delete_schedule("report.nightly")
        with self.assertRaises(delayq.NotFoundError):
            self.client.schedule("report.nightly")

    # --- the worker -------------------------------------------------------

    def test_worker_acks_with_the_result_and_fails_with_the_error(self):
        ok = self.client.enqueue("jobs", "fine", keep_for_ms=60_000)
        bad = self.client.enqueue("jobs", "boom", max_attempts=1)

        def handler(job):
            if job.text() == "boom":
                raise ValueError("cannot do " + job.text())
            return "did " + job.text()

        worker = delayq.Worker(self.client, "jobs", handler, concurrency=2, wait_ms=200).start()
        try:
            self.assertEqual(self.client.get(ok, wait="10s").result, b"did fine")
            self.assertTrue(wait_until(lambda: self.client.get(bad).state == "dead"))
        finally:
            self.assertTrue(worker.stop(10))
        self.assertEqual(self.client.get(bad).last_error, "ValueError: cannot do boom")

    def test_worker_touches_a_long_job_so_it_runs_once(self):
        # A touch goes every half ttr, so a touch may come 600 ms late (a
        # loaded machine) before the lease lapses.
        job_id = self.client.enqueue("slow", "x", ttr_ms=1200, keep_for_ms=60_000)
        runs = []

        def handler(job):
            runs.append(job.attempts)
            time.sleep(4.0)  # more than three ttrs

        worker = delayq.Worker(self.client, "slow", handler, concurrency=2, wait_ms=100).start()
        try:
            self.assertEqual(self.client.get(job_id, wait="10s").state, "done")
        finally:
            worker.stop(10)
        self.assertEqual(runs, [1])

    def reserves_answered(self):
        """How many reserve requests the server has answered with 200."""
        key = 'delayq_http_requests_total{route="/v1/topics/{}/reserve",method="POST",code="200"} '
        for line in self.client.metrics().splitlines():
            if line.startswith(key):
                return int(float(line[len(key):]))
        return 0

    def test_worker_takes_the_next_job_with_the_ack_under_its_name(self):
        ids = [self.client.enqueue("named", str(i), keep_for_ms=60_000) for i in range(5)]
        seen = []

        def handler(job):
            # Who holds the job, and how many reserves were needed so far.
            seen.append((self.client.get(job.id).holder, self.reserves_answered()))

        worker = delayq.Worker(self.client, "named", handler, wait_ms=200,
                               name="py-worker:7").start()
        try:
            for job_id in ids:
                self.assertEqual(self.client.get(job_id, wait="10s").state, "done")
        finally:
            self.assertTrue(worker.stop(10))
        self.assertEqual([holder for holder, _ in seen], ["py-worker:7"] * 5)
        # One reserve brought the first job; each ack brought the next.
        self.assertEqual(len({reserves for _, reserves in seen}), 1, seen)
        self.assertRegex(delayq.worker.default_name(), r"^[!-~]{1,128}$")

    # --- with the C++ side on the same store ------------------------------

    def delayq_cli(self, *args):
        return subprocess.run([delayq_program(), "--store", self.store, *args],
                              capture_output=True, text=True, timeout=60)

    def test_enqueued_here_worked_by_delayq_work(self):
        job_id = self.client.enqueue("shout", "hello", keep_for_ms=60_000)
        work = self.delayq_cli("work", "shout", "--result", "--once", "--poll", "50ms",
                               "--", "tr", "a-z", "A-Z")
        self.assertEqual(work.returncode, 0, work.stderr)
        self.assertEqual(self.client.get(job_id).result, b"HELLO")

    def test_added_by_delayq_add_worked_here(self):
        add = self.delayq_cli("add", "greet", "world", "--id", "g1", "--keep-for", "1m")
        self.assertEqual(add.returncode, 0, add.stderr)
        worker = delayq.Worker(self.client, "greet", lambda job: "hello " + job.text(),
                               wait_ms=200).start()
        try:
            self.assertEqual(self.client.get("g1", wait="10s").result, b"hello world")
        finally:
            worker.stop(10)
        got = self.delayq_cli("get", "g1", "--result")
        self.assertEqual(got.stdout, "hello world")

    def test_stop_leaves_no_job_reserved_and_loses_none(self):
        ids = [self.client.enqueue("drain", str(i)) for i in range(6)]
        done = []
        started = threading.Event()

        def handler(job):
            started.set()
            time.sleep(0.3)
            done.append(job.id)

        worker = delayq.Worker(self.client, "drain", handler, concurrency=2, wait_ms=2000).start()
        self.assertTrue(started.wait(10))
        self.assertTrue(worker.stop(30))
        stats = self.client.stats("drain")
        self.assertEqual(stats["reserved"], 0)
        self.assertEqual(stats["ready"] + len(done), len(ids))
        self.assertEqual(len(set(done)), len(done))


class SqliteClientTest(ClientSuite, unittest.TestCase):

    def store_url(self):
        self.dir = tempfile.TemporaryDirectory()
        return f"sqlite:{self.dir.name}/jobs.db"

    def tearDown(self):
        super().tearDown()
        self.dir.cleanup()


class RedisClientTest(ClientSuite, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.redis = RedisServer()
        cls.namespaces = 0

    @classmethod
    def tearDownClass(cls):
        cls.redis.stop()

    def store_url(self):
        type(self).namespaces += 1
        return self.redis.url(f"py{self.namespaces}")


class _Flaky(http.server.BaseHTTPRequestHandler):
    """503 for the first `failures` requests, then 200 with no topics."""

    failures = 2
    seen = 0

    def _answer(self):
        type(self).seen += 1
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        status = 503 if type(self).seen <= type(self).failures else 200
        body = (b'{"code":"UNAVAILABLE","message":"store down"}' if status == 503
                else b'{"topics":[],"id":"x"}')
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = _answer
    do_POST = _answer

    def log_message(self, *args):
        pass


class RetryTest(unittest.TestCase):
    def setUp(self):
        _Flaky.seen = 0
        self.http = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{self.http.server_address[1]}"
        self.client = delayq.Client(url, retries=3, retry_backoff=0.01)

    def tearDown(self):
        self.http.shutdown()
        self.http.server_close()

    def test_a_read_is_tried_again_after_503(self):
        self.assertEqual(self.client.topics(), [])
        self.assertEqual(_Flaky.seen, 3)

    def test_an_enqueue_without_an_id_is_not(self):
        with self.assertRaises(delayq.UnavailableError) as e:
            self.client.enqueue("t", "p")
        self.assertEqual((e.exception.status, _Flaky.seen), (503, 1))
        _Flaky.seen = 0
        self.assertEqual(self.client.enqueue("t", "p", id="x"), "x")
        self.assertEqual(_Flaky.seen, 3)

    def test_no_server_is_a_connection_error(self):
        client = delayq.Client(f"http://127.0.0.1:{free_port()}", retries=1,
                               retry_backoff=0.01)
        with self.assertRaises(delayq.ConnectionFailedError):
            client.topics()


class TokenTest(unittest.TestCase):
    def test_a_server_with_a_token_wants_it(self):
        with tempfile.TemporaryDirectory() as d:
            with open(f"{d}/token", "w") as f:
                f.write("s3cret-token-for-tests\n")
            server = DelayqServer(f"sqlite:{d}/jobs.db", "--token-file", f"{d}/token")
            try:
                with self.assertRaises(delayq.UnauthenticatedError):
                    delayq.Client(server.url).topics()
                self.assertEqual(delayq.Client(server.url, token="s3cret-token-for-tests").topics(), [])
            finally:
                server.stop()


class VersionTest(unittest.TestCase):
    """The clients' packages carry the version the program reports (the
    one in include/delayq/version.h)."""

    def program_version(self):
        out = subprocess.run([delayq_program(), "--version"], capture_output=True,
                             text=True, check=True).stdout
        return out.split()[-1]

    def test_the_python_package_has_the_programs_version(self):
        self.assertEqual(delayq.__version__, self.program_version())

    def test_the_node_package_has_the_programs_version(self):
        path = os.environ.get("DELAYQ_NODE_PACKAGE") or os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "..", "node", "package.json")
        with open(path) as f:
            self.assertEqual(json.load(f)["version"], self.program_version())


def write_report(result, path):
    """Each case as a gtest XML <testcase>, where `bazel test` asks for one
    ($XML_OUTPUT_FILE), so that every case is counted, not the target."""
    import xml.etree.ElementTree as ET

    failed = {t.id(): text for t, text in result.failures + result.errors}
    skipped = {t.id() for t, _ in result.skipped}
    suite = ET.Element("testsuite", name="python_client")
    for case_id in result.case_ids:
        case = ET.SubElement(suite, "testcase", name=case_id.rsplit(".", 1)[-1],
                             classname=case_id.rsplit(".", 1)[0])
        if case_id in failed:
            ET.SubElement(case, "failure", message="failed").text = failed[case_id]
        elif case_id in skipped:
            ET.SubElement(case, "skipped")
    root = ET.Element("testsuites")
    root.append(suite)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


class _Recording(unittest.TextTestResult):
    def startTest(self, test):
        super().startTest(test)
        self.case_ids = getattr(self, "case_ids", []) + [test.id()]


if __name__ == "__main__":
    program = unittest.main(exit=False, verbosity=2,
                            testRunner=unittest.TextTestRunner(resultclass=_Recording))
    if os.environ.get("XML_OUTPUT_FILE"):
        write_report(program.result, os.environ["XML_OUTPUT_FILE"])
    sys.exit(0 if program.result.wasSuccessful() else 1)
