"""The steps after a local publish, in their order: publish_to's upload, then --on-publish
(the hook sees the sitemap where it is served), then submit (the engines read what is
served). Each step's failure, or a SIGINT/SIGTERM during it, ends the sequence there and is
the step's own error (exit 7, 6, 9: the sitemap WAS published locally, so never 130's
"untouched"); the CLI writes the report and then raises it, once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crawler.core.access import redact
from crawler.core.words import plural
from crawler.errors import OnPublishError, SitemapCrawlerError, SubmitFailed, UploadError
from crawler.shell import interrupts
from sitemap_out.stylesheet import XSL_NAME


@dataclass(slots=True)
class Steps:
    """What the steps need besides the publish: the uploader and Google's credentials,
    both made before the crawl (so that a bad bucket or key fails then, and a key rotated
    during the crawl is not read again), and where lines go."""

    config: Any  # crawler.config.Config
    uploader: Any = None  # crawler.shell.upload.Uploader, with publish_to
    credentials: Any = None  # submit.check_ready's, with submit = ["google", ...]
    warn: Callable[[str], None] = print  # a warning line (stderr, or a JSON event)
    note: Callable[[str], None] | None = None  # an outcome line; None: quiet

    def run(self, result: Any, figures: dict[str, Any]) -> SitemapCrawlerError | None:
        """The steps, in order; the first failure's error (the steps after it are not
        run), or None. What each did goes into `figures` (the report's). A signal between
        two steps is the next one's interruption: it is not begun."""
        published = (
            f"published {plural(result.published.url_count, 'URL')} to {self.config.output}, but"
        )
        stages = [
            (UploadError, "", "the upload to publish_to was interrupted", self._upload),
            (OnPublishError, "the on-publish command ", "was interrupted", self._on_publish),
            (SubmitFailed, "submitting it ", "was interrupted", self._submit),
        ]
        wanted = (self.uploader is not None, bool(self.config.on_publish), bool(self.config.submit))
        stages = [stage for stage, want in zip(stages, wanted, strict=True) if want]
        at = None
        with interrupts.sigterm_interrupts():
            try:
                for at in stages:
                    error, words, _, step = at
                    if (why := step(result, figures)) is not None:
                        return error(f"{published} {words}{why}")
                at = None
            except KeyboardInterrupt:
                if at is not None:
                    error, words, interrupted, _ = at
                    return error(f"{published} {words}{interrupted}")
        return None

    def _upload(self, result: Any, figures: dict[str, Any]) -> str | None:
        uploader = self.uploader
        if uploader is None:
            return None
        try:
            sent = uploader.run(self._to_upload(result.published.files), self.warn)
        except KeyboardInterrupt:
            figures["publish_to"] = {"to": uploader.target.url, "error": "interrupted"}
            return (
                f"the upload to {uploader.target.url} was interrupted; the local set is whole, "
                "and the bucket holds an index whose files are all there (the next run "
                "completes the upload)"
            )
        except UploadError as exc:
            figures["publish_to"] = {"to": uploader.target.url, "error": str(exc)}
            return f"{exc}; the local set is whole"
        figures["publish_to"] = sent.figures()
        if self.note is not None:
            self.note(sent.summary())
        return None

    def _to_upload(self, files: list[Path]) -> list[Path]:
        """The published set, and with --stylesheet a site's own sitemap.xsl that the files
        name (the publish keeps it, as not ours, out of its set): a copy whose files name a
        stylesheet it lacks would show browsers nothing. First, as ours would go."""
        config = self.config
        theirs = config.output / XSL_NAME
        if (
            config.stylesheet
            and config.stylesheet_url is None
            and all(path.name != XSL_NAME for path in files)
            and theirs.is_file()
        ):
            return [theirs, *files]
        return list(files)

    def _on_publish(self, result: Any, figures: dict[str, Any]) -> str | None:
        from crawler.shell import on_publish

        config = self.config
        if not config.on_publish:
            return None
        env = on_publish.environment(config.output, result.sitemap_url, result.published.files)
        capture = config.log_format == "json"  # its output a line an event: stderr stays JSON
        try:
            outcome = on_publish.run(config.on_publish, env, capture=capture)
        except KeyboardInterrupt:  # the command was killed, the sitemap stays
            figures["on_publish_exit_code"] = None
            return "was interrupted (killed)"
        for line in outcome.output:  # captured (JSON logs), or sh could not be started
            self.warn(f"on-publish: {line}")
        figures["on_publish_exit_code"] = outcome.exit_code
        return None if outcome.ok else f"failed: {outcome.why()}"

    def _submit(self, result: Any, figures: dict[str, Any]) -> str | None:
        """The published sitemap (and its changes feed) to each engine's API, a line each.
        Any failure here, expected or not, is this step's (exit 9), never the run's."""
        from crawler.shell import submit

        config = self.config
        if not config.submit:
            return None
        sitemaps = [result.sitemap_url]
        if result.published.feed_url is not None:
            sitemaps.append(result.published.feed_url)
        said: list[str] = []
        figures["submitted"] = said

        def say(line: str) -> None:
            said.append(line)
            if self.note is not None:
                self.note(line)

        settings = submit.Settings.of(config)
        try:
            _, refusals = interrupts.run(
                submit.run(settings, sitemaps, status=False, say=say, credentials=self.credentials)
            )
        except KeyboardInterrupt:
            return "was interrupted"
        except Exception as exc:  # a google-auth error, a date out of range: still exit 9
            reason = str(exc).splitlines()[0] if str(exc).strip() else ""
            return f"failed: {redact(f'{type(exc).__name__}: {reason}', config.secrets)}"
        if refusals:
            return "failed: " + "; ".join(str(refusal) for refusal in refusals)
        return None
