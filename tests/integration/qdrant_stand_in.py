"""A stand-in Qdrant server for the tests: the REST calls lsr-eval's Qdrant engine makes, answered by Qdrant's own
Rust engine (qdrant-edge-py, in process) so that scoring, zero-score dropping and tie order are the server's code,
not local mode's. No Qdrant server installs on our machines (not on PyPI or Debian, no containers); this checks the
engine's ``url=`` path end to end through qdrant-client's HTTP client, and it is not a server anyone should use.

Collection metadata (``GET /collections/{name}``) is what qdrant-client's local mode reports for the same creation
request, so that the layout check reads the fields a server sends."""

from __future__ import annotations

import http.server
import json
import re
import tempfile
import threading
from pathlib import Path
from typing import Any

import qdrant_edge as qe
from qdrant_client import QdrantClient, models

VERSION = "1.17.0-stand-in"


class StandIn:
    """The server's state: per collection, local mode's description of it and an Edge shard holding its points."""

    def __init__(self, api_key: str | None = None) -> None:
        self.api_key = api_key
        self.folder = Path(tempfile.mkdtemp(prefix="qdrant-stand-in-"))
        self.meta = QdrantClient(":memory:")
        self.shards: dict[str, qe.EdgeShard] = {}
        self.requests: list[tuple[str, str]] = []

    # -- the REST calls ----------------------------------------------------------------------------------------
    def handle(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        self.requests.append((method, path))
        if path == "/":
            return 200, {"title": "qdrant - vector search engine", "version": VERSION, "commit": None}
        m = re.fullmatch(r"/collections/([^/]+)(/.*)?", path)
        if m is None:
            return 404, {"status": {"error": f"no route {path}"}}
        name, rest = m.group(1), m.group(2) or ""
        if rest == "/exists":
            return 200, {"exists": name in self.shards}
        if rest == "" and method == "PUT":
            return 200, self.create(name, models.CreateCollection(**body))
        if name not in self.shards:
            return 404, {"status": {"error": f"Not found: Collection `{name}` doesn't exist!"}}
        shard = self.shards[name]
        if rest == "" and method == "GET":
            return 200, self.meta.get_collection(name).model_dump(mode="json")
        if rest == "/points" and method == "PUT":
            shard.update(qe.UpdateOperation.upsert_points([self.point(p) for p in body["points"]]))
            return 200, {"operation_id": 0, "status": "completed"}
        if rest == "/points" and method == "POST":
            records = shard.retrieve(body["ids"], with_payload=body.get("with_payload", True), with_vector=False)
            return 200, [{"id": str(r.id), "payload": r.payload} for r in records]
        if rest == "/points/count":
            return 200, {"count": shard.count(qe.CountRequest(exact=True))}
        if rest == "/points/query/batch":
            return 200, [{"points": self.query(shard, q)} for q in body["searches"]]
        return 404, {"status": {"error": f"no route {method} {path}"}}

    def create(self, name: str, request: models.CreateCollection) -> bool:
        self.meta.create_collection(name, vectors_config=request.vectors or {},
                                    sparse_vectors_config=request.sparse_vectors)
        params = {}
        for field, p in (request.sparse_vectors or {}).items():
            modifier = qe.Modifier.Idf if p.modifier == models.Modifier.IDF else None
            params[field] = qe.EdgeSparseVectorParams(modifier=modifier)
        self.shards[name] = qe.EdgeShard.create(str(self.folder / name), qe.EdgeConfig(sparse_vectors=params))
        return True

    @staticmethod
    def point(p: dict[str, Any]) -> Any:
        vectors = {k: qe.SparseVector(v["indices"], v["values"]) for k, v in (p.get("vector") or {}).items()}
        return qe.Point(p["id"], vectors, p.get("payload"))

    @staticmethod
    def query(shard: Any, q: dict[str, Any]) -> list[dict[str, Any]]:
        vector = q["query"].get("nearest", q["query"])
        request = qe.QueryRequest(limit=q["limit"], with_payload=q.get("with_payload", False),
                                  query=qe.Query.Nearest(qe.SparseVector(vector["indices"], vector["values"]),
                                                         using=q["using"]))
        return [{"id": str(p.id), "version": p.version, "score": p.score, "payload": p.payload}
                for p in shard.query(request)]

    # -- serving -----------------------------------------------------------------------------------------------
    def serve(self) -> tuple[str, http.server.ThreadingHTTPServer]:
        """Start serving on a free port; returns the URL and the server (``shutdown()`` it)."""
        stand_in = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def answer(self) -> None:
                if stand_in.api_key is not None and self.headers.get("api-key") != stand_in.api_key:
                    status, result = 403, None
                else:
                    length = int(self.headers.get("Content-Length") or 0)
                    body = json.loads(self.rfile.read(length)) if length else None
                    status, result = stand_in.handle(self.command, self.path.split("?")[0], body)
                data = json.dumps(result if self.path.split("?")[0] == "/" else
                                  {"result": result, "status": "ok", "time": 0.0} if status == 200 else
                                  result or {"status": {"error": "Invalid api-key"}}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_POST = answer

            def log_message(self, *args: Any) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{server.server_address[1]}", server
