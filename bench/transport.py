"""What agentcache's transport adds to each request's latency, against a plain httpx client in the same run.

Run: ``python bench/transport.py [--sessions 64] [--turns 8] [--rounds 4] [--delay 1.0] [--together] [--url URL]
[--predict-in process|thread] [--floor-ms MS]``.

Each round runs ``--sessions`` concurrent agent sessions on one asyncio event loop, every session sending
``--turns`` requests in sequence, its history growing by a tool call and its result each turn (20 tools with rich
schemas, about 2,000 to 4,000 prompt tokens). The sessions' first requests are spread over ``--delay`` seconds, as
concurrent agents' are; ``--together`` starts them all at once. Rounds alternate between a plain
``httpx.AsyncClient`` and one on :class:`~agentcache.httpx.AsyncCacheAwareTransport` (canonicalization, prediction,
the ledger), so load on the machine hits both alike, each client in a process of its own with the same sessions, so
each pays the garbage collections of its own allocations (see :func:`measure`). Latency is from sending a request to
having its body parsed, as the caller sees it. CPU per request is that of the client's process over its rounds
(every thread, the turns' recording included), the part of it on the event loop's thread (what every request queues
behind), and apart from it that of agentcache's prediction process (``--predict-in process``, the default): the load
of other processes on a shared machine moves latency far more than CPU time.

Without ``--url`` the server is a local OpenAI-compatible stub in its own process. Each request asks it for a server
time of 0.5 to 1.5 times ``--delay``, drawn from its session and turn, so both clients meet the same server times;
the script subtracts it, and compares the client time left (what the client side costs a request). ``--url`` points
both clients at a real engine instead (its ``/v1/chat/completions``), and compares latencies.

``--floor-ms MS`` adds a third client, in its rounds too: a transport that does nothing but spend ``MS`` ms of CPU on
the event loop per request (the least any middleware that reads and rewrites a request spends), to show what that
much CPU alone adds to the latency at the same concurrency and server time. Where the client's core is saturated
(plain httpx queues already), every session's request waits for the others' added CPU, so the added latency is
about the sessions times the CPU added, for agentcache and this floor alike.

Targets (issue 14): added latency p50 <= 2 ms and p99 <= 10 ms at 64 concurrent sessions, every turn recorded. Exits
1 when one is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).parent))
import workload

from agentcache.httpx import AsyncCacheAwareTransport
from agentcache.transport import CacheMiddleware, settle
from agentcache.transport.process import process_cpu


def _answer(prompt_bytes: int) -> bytes:
    """A chat completion with its usage, as an HTTP/1.1 response that keeps the connection open."""
    prompt = prompt_bytes // 4
    body = json.dumps(
        {
            "id": "stub",
            "object": "chat.completion",
            "model": "stub",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": 1,
                "total_tokens": prompt + 1,
                "prompt_tokens_details": {"cached_tokens": 0},
            },
        }
    ).encode()
    head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    return head.encode() + body


def _header(head: bytes, name: bytes) -> bytes:
    return next(line.split(b":", 1)[1].strip() for line in head.split(b"\r\n") if line.lower().startswith(name))


async def serve_stub() -> None:
    """A chat completions endpoint on a free port that answers each request after the seconds its
    ``x-bench-delay`` header asks for; asyncio, so 64 open connections cost nothing. Prints its URL, then serves
    until killed."""

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(_header(head, b"content-length:"))
                await reader.readexactly(length)
                await asyncio.sleep(float(_header(head, b"x-bench-delay:")))
                writer.write(_answer(length))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(connection, "127.0.0.1", 0, backlog=1024)
    print(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    await server.serve_forever()


def session_requests(index: int, turns: int, delay: float) -> list[tuple[dict[str, Any], float]]:
    """One session's requests, each with the server time to ask the stub for: the same tools, a history that grows
    by one tool round trip per turn. The time is 0.5 to 1.5 times ``delay``, as a server's time varies with the
    length of what it generates (a fixed time would keep all sessions in lockstep, every answer landing in one
    burst), drawn from the session and turn so that both clients meet the very same server times."""
    tools = workload.tools(20)
    history = workload.messages(4 + 3 * turns, seed=index)
    jitter = random.Random(index)
    bodies = [
        {"model": "stub", "max_tokens": 8, "tools": tools, "messages": history[: 2 + 3 * n]} for n in range(turns)
    ]
    return [(body, delay * (0.5 + jitter.random())) for body in bodies]


Requests = list[tuple[dict[str, Any], float]]


async def run_round(
    clients: list[httpx.AsyncClient], url: str, sessions: list[Requests], name: str, spread: float
) -> list[float]:
    """Seconds per request of every session, the sessions running concurrently, each on its own client, their
    first requests spread evenly over ``spread`` seconds; ``name`` makes the round's sessions new ones (a session
    that starts over would be a rewritten history)."""

    async def one(client: httpx.AsyncClient, requests: Requests, index: int) -> list[float]:
        await asyncio.sleep(spread * index / len(sessions))
        times = []
        for body, delay in requests:
            headers = {"x-agentcache-session": f"{name}-{index}", "x-bench-delay": f"{delay:.6f}"}
            start = time.perf_counter()
            response = await client.post(url, json=body, headers=headers)
            response.raise_for_status()
            response.json()
            times.append(time.perf_counter() - start)
        return times

    results = await asyncio.gather(*(one(clients[i], requests, i) for i, requests in enumerate(sessions)))
    return [seconds for times in results for seconds in times]


def percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def cells(seconds: list[float]) -> str:
    return "".join(f"{percentile(seconds, q) * 1000:>10.1f}" for q in (50, 90, 99))


class SpendingTransport(httpx.AsyncBaseTransport):
    """A middleware that costs ``seconds`` of CPU on the event loop per request and does nothing else."""

    def __init__(self, seconds: float) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.seconds = seconds

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        until = time.thread_time() + self.seconds
        while time.thread_time() < until:
            pass
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class Side:
    """One client's measurements: the latency of every request; its client time, the latency less the server
    time the request asked the stub for; the CPU seconds its rounds took in its process (``time.process_time``,
    every thread, the turns' recording included), on its event loop's thread alone, and in agentcache's prediction
    process, which the load of other processes on the machine moves far less than latency; and the turns its ledger
    recorded."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.client_times: list[float] = []
        self.cpu = 0.0
        self.loop_cpu = 0.0
        self.cpu_elsewhere = 0.0
        self.recorded = 0


async def serve_side(url: str, args: argparse.Namespace) -> None:
    """One client's process: runs a round for each ``round NAME`` line on stdin, answering with the round's
    measurements as a JSON line; ``close`` closes the clients (an agentcache client's close waits for its turns
    to be recorded) and answers with the turns recorded.

    Each session has a client of its own, as agents built on one SDK client each do: httpx's connection pool
    looks at every connection for every request, so one client shared by 64 sessions spends more CPU in its
    pool than the requests cost, for both sides alike. The agentcache clients share one middleware (one ledger,
    one model of the server's cache), as ``middleware=`` is meant for."""
    sessions = [session_requests(i, args.turns, args.delay) for i in range(args.sessions)]
    delays = [delay for requests in sessions for _, delay in requests]
    timeout = httpx.Timeout(120.0)
    middleware = None
    if args.side == "agentcache":
        middleware = CacheMiddleware(server="sglang", telemetry=False, predict_in=args.predict_in)
        clients = [
            httpx.AsyncClient(transport=AsyncCacheAwareTransport(middleware=middleware), timeout=timeout)
            for _ in sessions
        ]
    elif args.side == "floor":
        clients = [
            httpx.AsyncClient(transport=SpendingTransport(args.floor_ms / 1000), timeout=timeout) for _ in sessions
        ]
    else:
        clients = [httpx.AsyncClient(timeout=timeout) for _ in sessions]
    spread = 0.0 if args.together else args.delay

    def recorded() -> int:
        return 0 if middleware is None else len(middleware.ledger.turns())

    while command := (await asyncio.to_thread(sys.stdin.readline)).split():
        if command[0] == "close":
            for client in clients:
                await client.aclose()
            print(json.dumps({"recorded": recorded()}), flush=True)
            return
        start, start_elsewhere = time.process_time(), process_cpu()
        start_loop = time.thread_time()  # this thread runs the event loop
        latencies = await run_round(clients, url, sessions, command[1], spread)
        loop_cpu = time.thread_time() - start_loop
        await asyncio.to_thread(settle)
        round_ = {
            "latencies": latencies,
            "client_times": [latency - delay for latency, delay in zip(latencies, delays, strict=True)],
            "cpu": time.process_time() - start,
            "loop_cpu": loop_cpu,
            "cpu_elsewhere": process_cpu() - start_elsewhere,
            "recorded": recorded(),
        }
        print(json.dumps(round_), flush=True)


class SideProcess:
    """A client's process (:func:`serve_side`), as the main process drives it."""

    def __init__(self, side: str, url: str) -> None:
        command = [sys.executable, __file__, *sys.argv[1:], "--side", side, "--side-url", url]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.measured = Side()
        self.warm_recorded = 0

    def ask(self, line: str) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        answer: dict[str, Any] = json.loads(self.process.stdout.readline())
        return answer

    def round(self, name: str) -> None:
        answer = self.ask(f"round {name}")
        if name == "warm":
            self.warm_recorded = answer["recorded"]
        else:
            self.measured.latencies += answer["latencies"]
            self.measured.client_times += answer["client_times"]
            self.measured.cpu += answer["cpu"]
            self.measured.loop_cpu += answer["loop_cpu"]
            self.measured.cpu_elsewhere += answer["cpu_elsewhere"]

    def close(self) -> Side:
        self.measured.recorded = self.ask("close")["recorded"] - self.warm_recorded
        self.process.wait()
        return self.measured


def measure(url: str, args: argparse.Namespace) -> list[Side]:
    """The plain and the agentcache clients (and the floor's, with ``--floor-ms``) over alternating rounds, each
    client in a process of its own, so that each pays the garbage collections its own allocations bring: in one
    shared process, a full collection (tens of milliseconds over the process's heap) pauses whichever round it
    falls in, whoever's allocations triggered it."""
    names = ("plain", "agentcache", *(("floor",) if args.floor_ms is not None else ()))
    sides = [SideProcess(name, url) for name in names]
    try:
        for side in sides:
            side.round("warm")  # warm them all: connections, tokenizer, canonical memo
        for round_ in range(args.rounds):
            for side in sides:
                side.round(f"r{round_}")
        return [side.close() for side in sides]
    finally:
        for side in sides:
            side.process.kill()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--delay", type=float, default=1.0, help="the stub server's mean answer time, in seconds")
    parser.add_argument(
        "--together",
        action="store_true",
        help="start every session at once (a burst of simultaneous first requests), not spread over --delay",
    )
    parser.add_argument("--url", help="a real engine's base URL instead of the stub")
    parser.add_argument(
        "--predict-in", choices=["process", "thread"], default="process", help="where agentcache predicts turns"
    )
    parser.add_argument(
        "--floor-ms", type=float, help="also run a client that only spends this much CPU per request, in ms"
    )
    parser.add_argument("--serve-stub", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--side", choices=["plain", "agentcache", "floor"], help=argparse.SUPPRESS)
    parser.add_argument("--side-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_stub:
        asyncio.run(serve_stub())
        return 0
    if args.side:
        asyncio.run(serve_side(args.side_url, args))
        return 0
    stub = None
    if args.url is None:
        command = [sys.executable, __file__, "--serve-stub"]
        stub = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert stub.stdout is not None
        base_url = stub.stdout.readline().strip()
    else:
        base_url = args.url.rstrip("/")
    try:
        base, ours, *floor = measure(f"{base_url}/v1/chat/completions", args)
    finally:
        if stub is not None:
            stub.kill()
    server = f"stub answering in {args.delay * 1000:.0f} ms +-50%" if args.url is None else args.url
    start = "all starting at once" if args.together else f"starting over {args.delay * 1000:.0f} ms"
    print(f"{args.sessions} concurrent sessions x {args.turns} turns x {args.rounds} rounds, {start}, {server}")
    sides = {"plain httpx": base, f"agentcache ({args.predict_in})": ours}
    sides.update({f"floor ({args.floor_ms} ms CPU)": side for side in floor})
    print(f"{'latency':<22}{'p50 ms':>10}{'p90 ms':>10}{'p99 ms':>10}{'CPU ms/req':>12}{'loop':>8}{'+ predictor':>13}")
    for name, side in sides.items():
        cpu = [side.cpu, side.loop_cpu, side.cpu_elsewhere]
        per_request = [seconds / len(side.latencies) * 1000 for seconds in cpu]
        print(f"{name:<22}{cells(side.latencies)}{per_request[0]:>12.2f}{per_request[1]:>8.2f}{per_request[2]:>13.2f}")
    judged = {name: side.latencies for name, side in sides.items()}
    if args.url is None:  # the stub's server time is known: what is left is the client's own time
        print("client time (latency less the server time the request asked for)")
        judged = {name: side.client_times for name, side in sides.items()}
        for name, times in judged.items():
            print(f"{name:<22}{cells(times)}")
    plain, wrapped, *floors = judged.values()
    added = {q: (percentile(wrapped, q) - percentile(plain, q)) * 1000 for q in (50, 90, 99)}
    for name, times in (("added", wrapped), *(("added by the floor", times) for times in floors)):
        print(
            f"{name:<22}"
            + "".join(f"{(percentile(times, q) - percentile(plain, q)) * 1000:>+10.1f}" for q in (50, 90, 99))
        )
    sent = args.rounds * args.sessions * args.turns
    recorded = ours.recorded
    print(f"turns recorded: {recorded:,} of {sent:,} requests")
    missed = [
        message
        for message, failed in (
            (f"added p50 {added[50]:.1f} ms > 2 ms", added[50] > 2),
            (f"added p99 {added[99]:.1f} ms > 10 ms", added[99] > 10),
            (f"{sent - recorded} requests without a turn", recorded != sent),
        )
        if failed
    ]
    for message in missed:
        print(f"MISSED: {message}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
