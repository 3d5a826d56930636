"""The benchmark scripts' processes: started and stopped, found and read from /proc.

Linux only: CPU time and resident memory come from /proc/PID/stat and /status, a
process's children from /proc/PID/task/*/children.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_port(port: int, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def memory_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of the process now (Linux /proc), in MB."""
    figures = {"VmRSS": float("nan"), "VmHWM": float("nan")}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in figures:
            figures[name] = int(value.split()[0]) / 1024
    return figures["VmRSS"], figures["VmHWM"]


def cpu_seconds(pid: int, thread: int | None = None) -> float:
    """User + system CPU time the process (or one of its threads) has used so far."""
    stat = Path(f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat")
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def workers_of(pid: int) -> list[int]:
    """The worker processes uvicorn started (not multiprocessing's resource tracker, nor
    the telemetry writer process)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            command = Path(f"/proc/{child}/cmdline").read_bytes()
            if b"resource_tracker" not in command and WRITER_CHILD not in command:
                found.append(int(child))
    return found


WRITER_CHILD = b"gateway.telemetry.writer_child"


def writer_of(pid: int) -> int | None:
    """The telemetry writer process of the serving process ``pid`` (telemetry.writer:
    process), None without one."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            with contextlib.suppress(OSError):
                if WRITER_CHILD in Path(f"/proc/{child}/cmdline").read_bytes():
                    return int(child)
    return None


def start(command: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


def rss_kb(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except FileNotFoundError:
            pass
    return total


def family(pid: int) -> list[int]:
    """The process and its children (uvicorn's workers), not multiprocessing's tracker."""
    found = [pid]
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                command = Path(f"/proc/{child}/cmdline").read_bytes()
                if b"resource_tracker" not in command:
                    found += family(int(child))
    except FileNotFoundError:
        pass
    return found


def cpu_of(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            total += cpu_seconds(pid)
    return total


def pin(pid: int, cpus: set[int]) -> None:
    """Every thread of the process and of its children to ``cpus`` (threads started
    later inherit the mask of the thread that starts them)."""
    for member in family(pid):
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            for task in Path(f"/proc/{member}/task").iterdir():
                with contextlib.suppress(ProcessLookupError):
                    os.sched_setaffinity(int(task.name), cpus)
