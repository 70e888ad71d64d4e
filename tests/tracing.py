"""Run a process under strace and read back every attempt it made to leave this machine.

A network namespace with only loopback (how CI runs the suite) hides a look-up: it fails
quietly and the program carries on. strace shows the attempt whether it succeeds or not:
the ``connect`` to the resolver on port 53, the ``connect`` to a remote address. So the
offline tests trace ``connect``, ``bind`` and the ``send*`` calls of the whole process
tree and judge each address in them:

- any port 53, even on loopback (a DNS query, whatever resolver answers it), or a
  connection to systemd-resolved's socket, is a look-up;
- a ``connect``/``send*`` to an address outside loopback is traffic leaving the machine
  (a UDP ``connect`` sends nothing, but it is how programs find their outward address);
- a ``bind`` to a non-zero port outside loopback is a server reachable from the network.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

STRACE = shutil.which("strace")
# Switches a test run may have set (conftest.py, scripts/test.sh): Docent must set them itself.
OUTSIDE_SWITCHES = ("ANONYMIZED_TELEMETRY", "ORT_DISABLE_TELEMETRY", "TIKTOKEN_CACHE_DIR", "XDG_CACHE_HOME")
# Under HOME: onnxruntime's 1DS telemetry store (events, device id), opened when telemetry starts.
ORT_TELEMETRY_STORE = Path(".cache", "Microsoft")
SYSCALLS = "connect,bind,sendto,sendmsg,sendmmsg"

_CALL = re.compile(r"^(?:\[pid\s+)?(?P<pid>\d+)\]?\s+(?P<call>connect|bind|sendto|sendmsg|sendmmsg)\(")
_INET = re.compile(
    r'sin_port=htons\((?P<port4>\d+)\), sin_addr=inet_addr\("(?P<addr4>[^"]+)"\)'
    r'|sin6_port=htons\((?P<port6>\d+)\).*?inet_pton\(AF_INET6, "(?P<addr6>[^"]+)"'
)
_RESOLVED = re.compile(r'sun_path="/run/systemd/resolve/')
_FD = re.compile(r"\((?P<fd>\d+),")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')


def strace_unusable() -> str | None:
    """Why strace cannot trace here (missing, or ptrace forbidden), or None when it can."""
    if STRACE is None:
        return "strace is not installed (apt-get install -y strace)"
    probe = subprocess.run([STRACE, "-f", "-qq", "-o", "/dev/null", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"strace cannot trace here: {probe.stderr.strip()[:200]}"
    return None


def clean_env(home: Path, data_dir: Path, **extra: str) -> dict[str, str]:
    """This environment without Docent's settings, keys or telemetry switches, with its own HOME."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("DOCENT_") and "API_KEY" not in k and k not in OUTSIDE_SWITCHES
    }
    home.mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(home), DOCENT_DATA_DIR=str(data_dir), PYTHONUNBUFFERED="1", **extra)
    return env


def strace_prefix(trace_file: Path) -> list[str]:
    """The words to put before a command to trace it, and every process it starts, into trace_file."""
    assert STRACE is not None
    return [STRACE, "-f", "-qq", "--seccomp-bpf", "-s", "256", "-e", f"trace={SYSCALLS}", "-o", str(trace_file), "--"]


def _is_local(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_unspecified  # connect() to 0.0.0.0 or :: reaches this machine


def _dns_question(line: str) -> str | None:
    """The host name a DNS query asks for, from the bytes strace printed (``\\6mobile\\6events...``)."""
    quoted = _QUOTED.search(line)
    if not quoted:
        return None
    packet = quoted.group(1).encode().decode("unicode_escape").encode("latin-1")
    labels, pos = [], 12  # after the header
    while pos < len(packet) and packet[pos]:
        labels.append(packet[pos + 1 : pos + 1 + packet[pos]].decode("ascii", errors="replace"))
        pos += 1 + packet[pos]
    return ".".join(labels) or None


@dataclass
class TraceReport:
    outbound: list[str] = field(default_factory=list)  # one line per attempt to leave the machine
    queried: set[str] = field(default_factory=set)  # host names in the DNS queries that got sent
    listening: set[tuple[str, int]] = field(default_factory=set)  # (address, port) bound to serve

    def summary(self) -> str:
        names = ", ".join(sorted(self.queried)) or "not sent, so not known"
        return f"{len(self.outbound)} attempts to leave this machine; names looked up: {names}\n" + "\n".join(
            self.outbound[:20]
        )


def read_trace(trace_file: Path) -> TraceReport:
    report = TraceReport()
    dns_sockets: set[tuple[str, str]] = set()  # (pid, fd) connected to port 53
    for line in trace_file.read_text(errors="replace").splitlines():
        call = _CALL.match(line)
        if not call:
            continue
        pid, name = call.group("pid"), call.group("call")
        fd_match = _FD.search(line, call.end() - 1)
        socket_id = (pid, fd_match.group("fd") if fd_match else "")
        if _RESOLVED.search(line):
            report.outbound.append(f"DNS look-up through systemd-resolved: {line}")
        if name.startswith("send") and socket_id in dns_sockets and (host := _dns_question(line)):
            report.queried.add(host)
        for match in _INET.finditer(line):
            address = match.group("addr4") or match.group("addr6")
            port = int(match.group("port4") or match.group("port6"))
            if port == 53:
                report.outbound.append(f"DNS query to {address}: {line}")
                dns_sockets.add(socket_id)
                if name.startswith("send") and (host := _dns_question(line)):
                    report.queried.add(host)
            elif name == "bind":
                if port:
                    report.listening.add((address, port))
                    if not ipaddress.ip_address(address).is_loopback:
                        report.outbound.append(f"listens beyond this machine on {address}:{port}: {line}")
            elif not _is_local(address):
                report.outbound.append(f"{name} to {address}:{port}: {line}")
    return report
