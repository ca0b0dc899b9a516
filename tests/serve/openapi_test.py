"""docs/openapi.yaml against the replies of a real `delayq serve`.

Every route and method the document lists is called, with good input and
with bad, on a server over a SQLite store; each reply must be a status the
document gives that operation (or one of the errors it promises every
operation), and its body must match that status's schema: the types, the
required and enumerated values, and no field the schema does not name. At
the end, every operation of the document must have been called, so a new
route without a case here fails too.
"""

import json
import os
import re
import sys
import tempfile
import unittest
import urllib.error
import urllib.request

import yaml

from servers import DelayqServer

# Statuses every operation may answer with the Error schema (the
# document's description lists them for every operation).
GENERIC_ERRORS = {400, 401, 403, 404, 409, 413, 415, 429, 431, 500, 503, 504}


def find_document():
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.path.join(here, "..", "..", "docs", "openapi.yaml"),):
        if os.path.exists(candidate):
            return candidate
    raise RuntimeError("docs/openapi.yaml not found")


class Schema:
    """Checks JSON values against the document's schemas (the part of
    OpenAPI 3.0 the document uses)."""

    def __init__(self, document):
        self.document = document

    def resolve(self, node):
        while isinstance(node, dict) and "$ref" in node:
            target = self.document
            for part in node["$ref"].lstrip("#/").split("/"):
                target = target[part]
            node = target
        return node

    def names(self, schema):
        """The property names `schema` allows (allOf merged)."""
        schema = self.resolve(schema)
        names = set(schema.get("properties", {}))
        for part in schema.get("allOf", []):
            names |= self.names(part)
        return names

    def check(self, value, schema, where="$", whole=True):
        """Errors of `value`; `whole` is False for one part of an allOf,
        whose fields the other parts name."""
        schema = self.resolve(schema)
        errors = []
        if value is None:
            if not schema.get("nullable"):
                errors.append(f"{where}: null, but not nullable")
            return errors
        for part in schema.get("allOf", []):
            errors += self.check(value, part, where, whole=False)
        kind = schema.get("type")
        types = {"object": dict, "array": list, "string": str, "boolean": bool}
        if kind in types and not isinstance(value, types[kind]):
            return errors + [f"{where}: {type(value).__name__}, want {kind}"]
        if kind == "integer" and (isinstance(value, bool) or not isinstance(value, int)):
            return errors + [f"{where}: {value!r}, want an integer"]
        if "enum" in schema and value not in schema["enum"]:
            errors.append(f"{where}: {value!r} not in {schema['enum']}")
        if isinstance(value, dict):
            allowed = self.names(schema)
            if allowed and whole:
                for name in sorted(set(value) - allowed):
                    errors.append(f"{where}.{name}: not in the document")
            for name in schema.get("required", []):
                if name not in value:
                    errors.append(f"{where}.{name}: required, missing")
            for name, sub in schema.get("properties", {}).items():
                if name in value:
                    errors += self.check(value[name], sub, f"{where}.{name}")
        if isinstance(value, list) and "items" in schema:
            for i, item in enumerate(value):
                errors += self.check(item, schema["items"], f"{where}[{i}]")
        return errors


class OpenApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(find_document()) as f:
            cls.document = yaml.safe_load(f)
        cls.schema = Schema(cls.document)
        cls.dir = tempfile.TemporaryDirectory()
        # A small body limit, so that a 413 is cheap to ask for.
        cls.server = DelayqServer(f"sqlite:{cls.dir.name}/jobs.db", "--max-body", "16384")
        cls.called = set()
        # (method, template) -> compiled path pattern
        cls.operations = {}
        for template, item in cls.document["paths"].items():
            pattern = "^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$"
            for method in item:
                if method in ("get", "post", "put", "delete"):
                    cls.operations[(method, template)] = re.compile(pattern)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.dir.cleanup()

    def operation(self, method, path):
        for (m, template), pattern in self.operations.items():
            if m == method and pattern.match(path):
                return template
        self.fail(f"{method.upper()} {path}: no such operation in the document")

    def call(self, method, path, body=None, want=None, raw=None, headers=None,
             server=None):
        """Calls the route and checks the reply against the document;
        returns (status, parsed body). `raw` is a body sent as it is, with
        `headers` as they are."""
        plain = path.split("?")[0]
        template = self.operation(method.lower(), plain)
        self.called.add((method.lower(), template))
        data = raw if raw is not None else (
            None if body is None else json.dumps(body).encode())
        url = (server or self.server).url
        request = urllib.request.Request(url + path, data=data, method=method)
        if data is not None and raw is None:
            request.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                status, text = reply.status, reply.read()
        except urllib.error.HTTPError as e:
            with e:
                status, text = e.code, e.read()
        if want is not None:
            self.assertEqual(status, want, f"{method} {path}: {text[:300]!r}")
        operation = self.document["paths"][template][method.lower()]
        responses = operation.get("responses", {})
        response = responses.get(str(status))
        if response is None:
            self.assertIn(status, GENERIC_ERRORS,
                          f"{method} {path}: status {status} is not in the document")
            response = {"$ref": "#/components/responses/Error"}
        response = self.schema.resolve(response)
        content = response.get("content", {})
        if "application/json" in content:
            parsed = json.loads(text)
            errors = self.schema.check(parsed, content["application/json"]["schema"])
            self.assertEqual(errors, [], f"{method} {path} -> {status}: {text[:500]!r}")
            return status, parsed
        return status, text

    def test_every_route_as_documented(self):
        c = self.call
        # Jobs.
        c("POST", "/v1/topics/mail/jobs", {"payload": "a", "id": "m1"}, 201)
        c("POST", "/v1/topics/mail/jobs", {"payload": "a", "id": "m1"}, 409)
        c("POST", "/v1/topics/mail/jobs", {"payload": "a", "nope": 1}, 400)
        c("POST", "/v1/topics/mail/jobs", {
            "payload_base64": "AP8=", "id": "m2", "delay_ms": 3_600_000, "ttr_ms": 5000,
            "priority": -1, "max_attempts": 2, "backoff": "fixed:1ms",
            "expire_after_ms": 7_200_000, "discard_expired": True,
            "unique_for_ms": 60_000, "keep_for_ms": 60_000, "keep_at_most": 5}, 201)
        c("POST", "/v1/topics/mail/jobs/batch", {"payloads": ["b", "c"]}, 201)
        c("POST", "/v1/topics/mail/jobs/batch", {"payloads": []}, 400)
        c("POST", "/v1/flows", {"jobs": [
            {"topic": "flow", "payload": "p", "id": "f-parent", "after": ["f-child"]},
            {"topic": "flow", "payload_base64": "AA==", "id": "f-child"}]}, 201)
        c("POST", "/v1/flows", {"jobs": [{"topic": "flow"}]}, 400)
        c("POST", "/v1/flows", {"jobs": [
            {"topic": "flow", "payload": "p", "id": "c-parent", "after": ["c-child"]},
            {"topic": "flow", "payload": "p", "id": "c-child"}]}, 201)
        _, gone = c("POST", "/v1/jobs/c-parent/cancel-flow", want=200)
        self.assertEqual(gone["cancelled"], ["c-parent", "c-child"])
        c("POST", "/v1/jobs/c-parent/cancel-flow", want=404)
        c("GET", "/v1/topics/mail/jobs?state=ready&limit=10", want=200)
        c("GET", "/v1/topics/mail/jobs?state=delayed", want=200)
        _, page = c("GET", "/v1/topics/mail/jobs?state=ready&limit=1", want=200)
        self.assertNotEqual(page["next_cursor"], "")
        _, rest = c("GET", "/v1/topics/mail/jobs?state=ready&limit=10&cursor="
                    + page["next_cursor"], want=200)
        self.assertEqual(rest["next_cursor"], "")
        c("GET", "/v1/topics/mail/jobs?cursor=nonsense", want=400)
        c("GET", "/v1/topics/mail/jobs?state=nope", want=400)
        c("GET", "/v1/topics/mail/jobs?offset=1", want=400)
        c("GET", "/v1/jobs/m2", want=200)
        c("GET", "/v1/jobs/nope", want=404)
        c("POST", "/v1/jobs/m2/promote", want=200)
        c("POST", "/v1/jobs/nope/promote", want=404)
        c("POST", "/v1/jobs/m1/retry", want=409)
        _, bulk = c("POST", "/v1/bulk/promote", {"ids": ["m2", "nope"]}, 200)
        self.assertEqual([e["id"] for e in bulk["errors"]], ["m2", "nope"])
        c("POST", "/v1/bulk/retry", {"ids": ["m1"]}, 200)
        c("POST", "/v1/bulk/cancel", {"ids": []}, 400)
        c("POST", "/v1/bulk/delete", {"ids": ["m1"]}, 404)
        # Leases.
        c("POST", "/v1/topics/empty/reserve", {}, 200)
        _, got = c("POST", "/v1/topics/mail/reserve", {"max": 10, "worker": "tester:1"}, 200)
        c("POST", "/v1/topics/mail/reserve", {"worker": "two words"}, 400)
        _, workers = c("GET", "/v1/workers?limit=10", want=200)
        self.assertGreater(len(workers["leases"]), 0)
        c("GET", "/v1/workers?cursor=%25%25", want=400)
        leases = {l["job"]["id"]: l for l in got["leases"]}
        m1, m2 = leases["m1"], leases["m2"]
        others = [l for i, l in leases.items() if i not in ("m1", "m2")]
        c("POST", "/v1/jobs/m1/touch", {"token": m1["token"]}, 200)
        c("POST", "/v1/jobs/m1/touch", {"token": "1"}, 409)
        c("POST", "/v1/jobs/m1/release", {"token": m1["token"], "delay_ms": 0}, 200)
        c("POST", "/v1/jobs/m1/ack", {"token": m1["token"]}, 409)
        c("POST", "/v1/jobs/m2/ack", {"token": m2["token"], "result": "r"}, 200)
        c("GET", "/v1/jobs/m2?wait=1s", want=200)
        c("GET", "/v1/jobs/m2/history", want=200)
        c("POST", "/v1/leases/ack", {"leases": [
            {"id": l["job"]["id"], "token": l["token"]} for l in others] +
            [{"id": "m1", "token": "1"}]}, 200)
        c("POST", "/v1/leases/ack", {"leases": []}, 400)
        _, got = c("POST", "/v1/topics/mail/reserve", {"wait_ms": 1000}, 200)
        m1 = got["leases"][0]
        c("POST", "/v1/jobs/m1/fail", {"token": m1["token"], "error": "x"}, 200)
        c("POST", "/v1/jobs/m1/fail", {"token": m1["token"]}, 409)
        # Dead jobs, kick and purge.
        c("POST", "/v1/topics/graves/jobs", {"payload": "d", "id": "d1", "max_attempts": 1}, 201)
        _, got = c("POST", "/v1/topics/graves/reserve", {}, 200)
        c("POST", "/v1/jobs/d1/fail", {"token": got["leases"][0]["token"], "error": "e"}, 200)
        c("GET", "/v1/topics/graves/jobs?state=dead", want=200)
        c("POST", "/v1/topics/graves/kick", {"max": 1}, 200)
        c("POST", "/v1/topics/graves/purge", {"state": "dead"}, 200)
        c("POST", "/v1/topics/graves/purge", {}, 400)
        c("POST", "/v1/jobs/d1/retry", want=409)
        c("DELETE", "/v1/jobs/d1", want=200)
        c("DELETE", "/v1/jobs/d1", want=404)
        # Topics and counts.
        c("GET", "/v1/topics", want=200)
        c("GET", "/v1/topics/mail/stats", want=200)
        c("POST", "/v1/topics/mail/pause", want=200)
        c("POST", "/v1/topics/mail/resume", {}, 200)
        c("GET", "/v1/counts?minutes=5&topic=mail", want=200)
        c("GET", "/v1/counts?minutes=0", want=400)
        # Batches (SQLite keeps them).
        _, batch = c("POST", "/v1/batches",
                     {"topic": "reports", "payload": "all sent",
                      "id": "march"}, 201)
        self.assertEqual(batch["total"], 0)
        c("POST", "/v1/batches", {"topic": "reports", "id": "march"}, 409)
        c("POST", "/v1/topics/invoices/jobs",
          {"payload": "x", "batch": "march"}, 201)
        _, batch = c("GET", "/v1/batches/march", want=200)
        self.assertEqual(batch["pending"], 1)
        c("GET", "/v1/batches/nobatch", want=404)
        _, batch = c("POST", "/v1/batches/march/close", want=200)
        self.assertTrue(batch["closed"])
        c("POST", "/v1/batches/nobatch/close", want=404)
        c("POST", "/v1/topics/invoices/jobs",
          {"payload": "x", "batch": "march"}, 409)

        # Limits and schedules.
        c("PUT", "/v1/topics/mail/limit", {"rate": 50, "concurrency": 10}, 200)
        c("PUT", "/v1/topics/mail/limit", {"rate": -1}, 400)
        c("GET", "/v1/topics/mail/limit", want=200)
        c("GET", "/v1/limits", want=200)
        c("DELETE", "/v1/topics/mail/limit", want=200)
        c("GET", "/v1/topics/mail/limit", want=404)
        c("PUT", "/v1/schedules/nightly", {"spec": "0 3 * * *", "topic": "reports",
                                           "payload": "{}", "time_zone": "Europe/Berlin"}, 200)
        c("PUT", "/v1/schedules/bad", {"spec": "nope", "topic": "reports"}, 400)
        c("GET", "/v1/schedules/nightly", want=200)
        c("GET", "/v1/schedules", want=200)
        c("DELETE", "/v1/schedules/nightly", want=200)
        c("GET", "/v1/schedules/nightly", want=404)
        # The errors every operation may give, each in the Error shape.
        c("POST", "/v1/topics/mail/jobs", raw=b"payload=x", want=415,
          headers={"Content-Type": "text/plain"})
        c("POST", "/v1/topics/mail/jobs", {"payload": "x" * 20000}, 413)
        c("GET", "/v1/topics", headers={"X-Big": "x" * 9000}, want=431)
        c("GET", "/v1/topics", headers={"Origin": "http://elsewhere.example"}, want=403)
        c("POST", "/v1/topics/mail/jobs", raw=b"{", want=400,
          headers={"Content-Type": "application/json"})
        with tempfile.TemporaryDirectory() as d:
            with open(f"{d}/token", "w") as f:
                f.write("a-token-of-the-openapi-test\n")
            locked = DelayqServer(f"sqlite:{d}/jobs.db", "--token-file", f"{d}/token")
            try:
                c("GET", "/v1/topics", want=401, server=locked)
            finally:
                locked.stop()
        # Documents.
        c("GET", "/metrics", want=200)
        c("GET", "/v1/openapi.yaml", want=200)
        missing = sorted(f"{m.upper()} {t}" for m, t in set(self.operations) - self.called)
        self.assertEqual(missing, [], "operations of the document no case calls")


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False).result.wasSuccessful() else 1)
