"""Writes the synchronous client from the asynchronous one, so the two cannot drift apart:

    python scripts/generate_sync_client.py           # rewrites _client.py and _resources.py
    python scripts/generate_sync_client.py --check   # exits 1 (with a diff) when they are stale

The async modules are the source (edit those): removing `async`/`await` and renaming the async
names is mechanical, while adding them would need to know which calls do I/O. Each rule below is a
text replacement, applied in order to both files; a rule that matches nothing in either fails the
run, so an edit of the source that a rule no longer fits is noticed here, not in a different client.
tests/test_generated.py checks that the checked-in files equal the output.
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "mediagen"
# source (async) -> generated (sync)
FILES = {"_async_client.py": "_client.py", "_async_resources.py": "_resources.py"}

NOTICE = "# Generated from {source} by python/scripts/generate_sync_client.py: edit {source} and rerun it.\n"

# (pattern, replacement, is_regex): specific rules first, the generic async/await removal last.
RULES: list[tuple[str, str, bool]] = [
    # module docstrings
    (
        '"""The asynchronous client (httpx.AsyncClient, on asyncio or trio), source of the sync one (scripts/generate_sync_client.py)."""',
        '"""The synchronous client (httpx.Client), generated from the asynchronous one (_async_client.py)."""',
        False,
    ),
    ('"""The resources of AsyncMediaGenClient', '"""The resources of MediaGenClient', False),
    # imports
    (
        "from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping\n",
        "from collections.abc import Callable, Generator, Iterator, Mapping\n",
        False,
    ),
    ("from collections.abc import AsyncGenerator, Callable, Mapping, Sequence\n", "from collections.abc import Callable, Generator, Mapping, Sequence\n", False),
    ("from contextlib import aclosing\n", "from contextlib import closing\n", False),
    ("import anyio\n", "", False),
    ("from ._async_resources import", "from ._resources import", False),
    ("from ._async_client import", "from ._client import", False),
    # names and the httpx client
    (r"\bAsyncMediaGenClient\b", "MediaGenClient", True),
    ("httpx.AsyncClient", "httpx.Client", False),
    ("Use it as an async context manager (or await aclose())", "Use it as a context manager (or call close())", False),
    # closing, the context manager protocol, reads and sleeps
    ("async def aclose(self)", "def close(self)", False),
    ("await self._http.aclose()", "self._http.close()", False),
    ("await self.aclose()", "self.close()", False),
    ("__aenter__", "__enter__", False),
    ("__aexit__", "__exit__", False),
    ("await res.aread()", "res.read()", False),
    ("await res.aclose()", "res.close()", False),
    ("await anyio.sleep(", "time.sleep(", False),
    ("res.aiter_bytes()", "res.iter_bytes()", False),
    (".aiter_sse()", ".iter_sse()", False),
    ("aclosing(", "closing(", False),
    # types
    ("Callable[..., Awaitable[Page[T]]]", "Callable[..., Page[T]]", False),
    ("AsyncIterator[T]", "Iterator[T]", False),
    (r"AsyncGenerator\[([^,\n]+), None\]", r"Generator[\1, None, None]", True),
    # an async generator cannot `yield from`
    ('            for item in page["data"]:\n                yield item\n', '            yield from page["data"]\n', False),
    ("(await self.request(method, path, **kwargs))", "self.request(method, path, **kwargs)", False),
    # everything else: drop the keywords
    (r"\basync (def|with|for) ", r"\1 ", True),
    (r"\bawait ", "", True),
]


def generate(source_name: str, text: str, hits: list[int]) -> str:
    """The sync module of one async module; adds each rule's match count to `hits`."""
    out = text
    for i, (pattern, replacement, is_regex) in enumerate(RULES):
        if is_regex:
            out, n = re.subn(pattern, replacement, out)
        else:
            n = out.count(pattern)
            out = out.replace(pattern, replacement)
        hits[i] += n
    # The notice goes right after the module docstring, so the docstring stays the module's.
    end = out.index('"""', 3) + 3
    return out[:end] + "\n\n" + NOTICE.format(source=source_name) + "\n" + out[end:].lstrip("\n")


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = False
    hits = [0] * len(RULES)
    outputs = {target: generate(source, (PACKAGE / source).read_text(), hits) for source, target in FILES.items()}
    unused = [RULES[i][0] for i, n in enumerate(hits) if n == 0]
    if unused:
        raise SystemExit(f"generate_sync_client: rules that match nothing (update RULES): {unused}")
    for target_name, expected in outputs.items():
        target = PACKAGE / target_name
        actual = target.read_text() if target.exists() else ""
        if actual == expected:
            continue
        if check:
            stale = True
            sys.stdout.writelines(difflib.unified_diff(actual.splitlines(True), expected.splitlines(True), f"{target_name} (checked in)", f"{target_name} (generated)"))
        else:
            target.write_text(expected)
            print(f"wrote {target}")
    if stale:
        print("the sync client is stale: run python python/scripts/generate_sync_client.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
