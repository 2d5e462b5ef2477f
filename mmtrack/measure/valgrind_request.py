"""Callgrind's client requests (``CALLGRIND_ZERO_STATS``, ``CALLGRIND_DUMP_STATS_AT``) without a compiler.

A client request is Valgrind's magic instruction sequence (``valgrind.h``): four rotates of one register that
add up to nothing, then a no-op ``xchg``/``orr`` that Valgrind reads as "a request, its arguments are here".
Outside Valgrind the function returns 0 and does nothing. The few bytes of one function are written into a page
of their own and called through ctypes, so ``--instrument callgrind`` needs no C compiler and no headers, and no
benchmark can hit the markers by accident (it would have to run this exact sequence): the earlier markers,
``getppid`` and ``getpgrp``, were ordinary system calls a benchmark may make (docs/design/callgrind.md).
"""

from __future__ import annotations

import ctypes
import mmap
import platform
from dataclasses import dataclass

# valgrind/callgrind.h: VG_USERREQ_TOOL_BASE('C','T') and the requests after it.
_CALLGRIND_BASE = (ord("C") << 24) | (ord("T") << 16)
DUMP_STATS, ZERO_STATS, TOGGLE_COLLECT, DUMP_STATS_AT = (_CALLGRIND_BASE + i for i in range(4))

# ``void request(unsigned long args[6])``: the args array is (request, arg1 .. arg5); outside Valgrind it does
# nothing (the result Valgrind leaves in a register is not read). Bytes checked against gcc's output for valgrind.h's macros (x86-64) and valgrind's decoder.
_CODE = {
    # mov rax,rdi; xor edx,edx; rol rdi,3; rol rdi,13; rol rdi,61; rol rdi,51; xchg rbx,rbx; mov rax,rdx; ret
    "x86_64": bytes.fromhex("4889f8 31d2 48c1c703 48c1c70d 48c1c73d 48c1c733 4887db 4889d0 c3"),
    # mov x4,x0; movz x3,#0; ror x12 by 3, 13, 51, 61; orr x10,x10,x10; mov x0,x3; ret (little-endian words)
    "aarch64": b"".join(w.to_bytes(4, "little") for w in (
        0xAA0003E4, 0xD2800003, 0x93CC0D8C, 0x93CC358C, 0x93CCCD8C, 0x93CCF58C, 0xAA0A014A, 0xAA0303E0,
        0xD65F03C0)),
}
_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}
_PROT_READ, _PROT_EXEC = 1, 4
RUNNING_ON_VALGRIND = 0x1001  # valgrind.h: a request every tool answers, harmless


class RequestsUnavailable(RuntimeError):
    """This machine cannot issue Valgrind client requests from Python (another CPU, or no executable page)."""


class _Requests:
    def __init__(self) -> None:
        self._function = None
        self._page: mmap.mmap | None = None

    def _load(self):
        machine = platform.machine().lower()
        code = _CODE.get(_ALIASES.get(machine, machine))
        if code is None:
            raise RequestsUnavailable(f"Valgrind client requests are written for x86-64 and AArch64, not {machine}")
        page = mmap.mmap(-1, mmap.PAGESIZE)
        page.write(code)
        address = ctypes.addressof(ctypes.c_char.from_buffer(page))
        libc = ctypes.CDLL(None, use_errno=True)
        # Written, then made executable and read-only: no page is writable and executable at once.
        if libc.mprotect(ctypes.c_void_p(address), ctypes.c_size_t(mmap.PAGESIZE), _PROT_READ | _PROT_EXEC) != 0:
            raise RequestsUnavailable(f"cannot make a page executable for Valgrind client requests "
                                      f"(mprotect: errno {ctypes.get_errno()})")
        self._page = page  # kept alive: the function lives in it
        # No result kept and no argument converted per call: a sample's region holds as little of ctypes as can be.
        self._function = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)
        return self._function

    def __call__(self, request: int, *args: int) -> None:
        self.issue(block(request, *args))

    def issue(self, prepared: ctypes.Array) -> None:
        """Issue a request whose block (:func:`block`) was made beforehand."""
        function = self._function or self._load()
        function(prepared)


request = _Requests()


def block(request_code: int, *args: int) -> ctypes.Array:
    """A request and its arguments as Valgrind reads them: six machine words."""
    return (ctypes.c_ulong * 6)(request_code, *args, *([0] * (5 - len(args))))


@dataclass(slots=True)
class Bracket:
    """The two requests around one sample, made before it: inside the region only the calls run."""

    label: ctypes.Array  # the C string the dump's trigger line names
    zero: ctypes.Array
    dump: ctypes.Array

    @classmethod
    def labelled(cls, label: str) -> "Bracket":
        text = ctypes.create_string_buffer(label.encode())
        return cls(text, block(ZERO_STATS), block(DUMP_STATS_AT, ctypes.addressof(text)))

    def zero_stats(self) -> None:
        """``CALLGRIND_ZERO_STATS``: callgrind's counters start again from zero here."""
        request.issue(self.zero)

    def dump_stats_at(self) -> None:
        """``CALLGRIND_DUMP_STATS_AT(label)``: callgrind writes a profile whose trigger line names the label."""
        request.issue(self.dump)


def dump_stats_at(label: ctypes.Array) -> None:
    """``CALLGRIND_DUMP_STATS_AT(label)`` with a C string the caller keeps alive."""
    request(DUMP_STATS_AT, ctypes.addressof(label))
