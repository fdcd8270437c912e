"""The explain driver: one URL judged exactly as a crawl would judge it, its links not
followed. It composes a Crawl's parts rather than living in it: explain alone waits on one
page's canonical by judging it on the spot (#24)."""

from __future__ import annotations

from crawler.core.frontier import Task
from crawler.core.report import DecisionRecord
from crawler.shell.engine import Crawl


async def explain(crawl: Crawl, url: str) -> list[DecisionRecord]:
    """The service behind `explain`: `url`'s decision records, one per redirect hop, the
    final one last. A page listed here may still lose to a byte-identical twin in a whole
    crawl."""
    records: list[DecisionRecord] = []
    journal = crawl.journal
    journal.echo = records.append
    target = crawl.plan.to_crawl(crawl.known_as(url))
    task = Task(target, 0, None)
    async with crawl.opened():
        await crawl.read_robots_at(target)
        screened = crawl.links.screen(target, 0)
        if screened is not None:
            crawl.links.record(target, None, screened, task)
        else:
            crawl.frontier.mark_seen(target)
            judged = await crawl.page_judge.judge(task)
            if judged is not None and journal.canonicals:  # #24: is it usable?
                await _judge_quietly(crawl, judged[1].canonical, judged[0])
        journal.settle_canonicals()
    return records


async def _judge_quietly(crawl: Crawl, url: str | None, referrer: str) -> None:
    """Judge url (crawl space) for its decision's effect alone, not recorded in the
    answer: explain's page waits on its canonical's (#24)."""
    if url is None or url in crawl.frontier:
        return
    journal = crawl.journal
    echo, journal.echo = journal.echo, None
    try:
        task = Task(url, 1, crawl.plan.public(referrer))
        crawl.frontier.mark_seen(url)
        screened = crawl.links.screen(url, 1)
        if screened is not None:
            crawl.links.record(url, None, screened, task)
        else:
            await crawl.page_judge.judge(task)
    finally:
        journal.echo = echo


def walled_lines(crawl: Crawl) -> list[str]:
    """What a bot wall that answered instead of the site means, and how to let the crawler
    in: explain's last lines, when one did."""
    lines = []
    if (walled := crawl.robots_walled()) is not None:
        lines.append(walled)
    walls = crawl.page_judge.walls
    lines.extend(walls.line(service) for service in walls.counts)
    return lines
