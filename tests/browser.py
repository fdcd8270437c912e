"""Headless Chromium driven over the DevTools protocol, for tests of pages we generate.

Debian's `chromium` is started by the test with `--remote-debugging-port=0` and a temporary
profile; its DevTools address is read from the line it prints on stderr, and one page is
driven over aiohttp's websocket client (aiohttp is already a dependency, so no Playwright or
Selenium). Every call has a deadline that says what was awaited; on exit the websocket is
closed and chromium's whole process group (it forks renderers, a GPU and a zygote process)
is killed, whatever happened.

    async with Chromium(tmp_path) as browser:
        page = await browser.page()
        await page.goto(path.as_uri())
        assert await page.evaluate("document.title") == "..."
        assert page.errors == []

`chromium_or_skip()` gives the binary, or skips the test with a reason, except in CI
(CI=true), where a missing chromium fails the test: .ci/run installs it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import shutil
import signal
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp

from tests.procs import missing

#: Seconds for chromium to start, and for one DevTools call to answer.
START_TIMEOUT = 30.0
CALL_TIMEOUT = 15.0

_LISTENING = re.compile(rb"DevTools listening on (ws://127\.0\.0\.1:\d+/\S+)")


def chromium_or_skip() -> str:
    """The chromium binary; skip (outside CI) or fail (in CI) when there is none."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    missing("no chromium on PATH (Debian: apt-get install chromium)")


class CdpError(AssertionError):
    """A DevTools call failed, or a script threw: the message says which."""


class Page:
    """One tab. `errors` collects what the page's scripts threw and what they logged as
    errors (uncaught exceptions, console.error, error log entries), for a test to assert
    on; `events` the method names of every event seen, in order."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self._ws = ws
        self._next_id = 0
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._waiters: list[tuple[str, asyncio.Future[dict[str, Any]]]] = []
        self.errors: list[str] = []
        self.events: list[str] = []
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        try:
            async for msg in self._ws:
                if msg.type != aiohttp.WSMsgType.TEXT:
                    break
                message = json.loads(msg.data)
                if "id" in message:
                    future = self._pending.pop(message["id"], None)
                    if future is not None and not future.done():
                        future.set_result(message)
                    continue
                self._event(message["method"], message.get("params", {}))
        finally:
            gone = CdpError("the DevTools connection closed")
            for future in [*self._pending.values(), *(f for _, f in self._waiters)]:
                if not future.done():
                    future.set_exception(gone)

    def _event(self, method: str, params: dict[str, Any]) -> None:
        self.events.append(method)
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            self.errors.append(f"uncaught: {text}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            args = [a.get("value", a.get("description", "")) for a in params.get("args", [])]
            self.errors.append(f"console.{params['type']}: {' '.join(map(str, args))}")
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            self.errors.append(f"log: {params['entry'].get('text')}")
        for waiter in list(self._waiters):
            name, future = waiter
            if name == method and not future.done():
                future.set_result(params)
                self._waiters.remove(waiter)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        """One DevTools command; its result, or CdpError."""
        self._next_id += 1
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[self._next_id] = future
        await self._ws.send_str(
            json.dumps({"id": self._next_id, "method": method, "params": params})
        )
        try:
            reply = await asyncio.wait_for(future, CALL_TIMEOUT)
        except TimeoutError:
            raise CdpError(f"no answer to {method} within {CALL_TIMEOUT:g} s") from None
        if "error" in reply:
            raise CdpError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    def expect(self, event: str) -> asyncio.Future[dict[str, Any]]:
        """A future for the next `event`: make it before the command that causes it."""
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiters.append((event, future))
        return future

    async def goto(self, url: str) -> None:
        """Open `url` and wait for its load event (its scripts have run by then)."""
        loaded = self.expect("Page.loadEventFired")
        reply = await self.send("Page.navigate", url=url)
        if reply.get("errorText"):
            raise CdpError(f"navigating to {url}: {reply['errorText']}")
        try:
            await asyncio.wait_for(loaded, CALL_TIMEOUT)
        except TimeoutError:
            raise CdpError(f"{url} did not load within {CALL_TIMEOUT:g} s") from None

    async def evaluate(self, expression: str) -> Any:
        """The value of a JS expression (promises awaited); CdpError if it throws."""
        reply = await self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in reply:
            details = reply["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise CdpError(f"{expression!r:.200} threw: {text}")
        return reply["result"].get("value")

    async def click(self, selector: str) -> None:
        """A real mouse click (press and release) in the middle of the first element that
        matches `selector`, scrolled into view first: what a user's click does, hit-testing
        included, unlike element.click()."""
        box = await self.evaluate(
            f"""(() => {{
                const el = document.querySelector({json.dumps(selector)});
                if (!el) return null;
                el.scrollIntoView({{block: "center"}});
                const r = el.getBoundingClientRect();
                return {{x: r.left + r.width / 2, y: r.top + r.height / 2}};
            }})()"""
        )
        if box is None:
            raise CdpError(f"nothing matches {selector!r} to click")
        for kind in ("mousePressed", "mouseReleased"):
            await self.send(
                "Input.dispatchMouseEvent",
                type=kind,
                x=box["x"],
                y=box["y"],
                button="left",
                clickCount=1,
            )

    async def type_into(self, selector: str, text: str) -> None:
        """Focus the field and type `text` as a keyboard would (it fires input events)."""
        await self.evaluate(f"document.querySelector({json.dumps(selector)}).focus()")
        await self.send("Input.insertText", text=text)

    async def set_viewport(self, width: int, height: int) -> None:
        await self.send(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    async def screenshot(self, path: Path, *, full_page: bool = True) -> Path:
        """A PNG of the page (the whole page by default) into `path`."""
        reply = await self.send(
            "Page.captureScreenshot", format="png", captureBeyondViewport=full_page
        )
        path.write_bytes(base64.b64decode(reply["data"]))
        return path

    async def close(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader
        await self._ws.close()


class Chromium:
    """A headless chromium for one test: an async context manager that kills it on exit."""

    def __init__(self, tmp: Path, *, width: int = 1280, height: int = 900) -> None:
        self._binary = chromium_or_skip()
        self._profile = tmp / "chromium-profile"
        self._size = (width, height)
        self._proc: asyncio.subprocess.Process | None = None
        self._http: aiohttp.ClientSession | None = None
        self._pages: list[Page] = []
        self._port = 0

    async def __aenter__(self) -> Chromium:
        self._profile.mkdir(parents=True, exist_ok=True)
        args = [
            "--headless=new",
            "--remote-debugging-port=0",
            f"--user-data-dir={self._profile}",
            f"--window-size={self._size[0]},{self._size[1]}",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-gpu",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--metrics-recording-only",
            "--mute-audio",
            "--hide-scrollbars",
        ]
        if os.geteuid() == 0:  # chromium refuses to run as root with its sandbox
            args.append("--no-sandbox")
        self._proc = await asyncio.create_subprocess_exec(
            self._binary,
            *args,
            "about:blank",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # its own process group: killed whole on exit
        )
        try:
            url = await asyncio.wait_for(self._listening(), START_TIMEOUT)
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        self._port = int(url.split(":")[2].split("/")[0])
        self._http = aiohttp.ClientSession()
        return self

    async def _listening(self) -> str:
        assert self._proc is not None and self._proc.stderr is not None
        said: list[bytes] = []
        while True:
            line = await self._proc.stderr.readline()
            if not line:
                raise CdpError(
                    "chromium ended before it listened for DevTools:\n"
                    + b"".join(said[-20:]).decode(errors="replace")
                )
            said.append(line)
            found = _LISTENING.search(line)
            if found:
                # keep draining stderr so that chromium never blocks on a full pipe
                asyncio.get_running_loop().create_task(self._drain())
                return found.group(1).decode()

    async def _drain(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        with contextlib.suppress(Exception):
            while await self._proc.stderr.read(65536):
                pass

    async def page(self) -> Page:
        """A new tab, with the runtime, log and page events on."""
        assert self._http is not None
        base = f"http://127.0.0.1:{self._port}"
        async with self._http.put(f"{base}/json/new?about:blank") as reply:
            reply.raise_for_status()
            target = await reply.json()
        ws = await self._http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0)
        page = Page(ws)
        self._pages.append(page)
        for domain in ("Page", "Runtime", "Log"):
            await page.send(f"{domain}.enable")
        await page.set_viewport(*self._size)
        return page

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        for page in self._pages:
            with contextlib.suppress(Exception):
                await page.close()
        if self._http is not None:
            await self._http.close()
        proc = self._proc
        if proc is not None:
            # the group outlives its leader while a renderer or the zygote lives: kill it all
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), 10)
