"""The fleet: `job --sites FILE --index N` (N from JOB_COMPLETION_INDEX in an Indexed Job)
crawls the site on line N, under DIR/sites/<host[_port][_path]>/out and /state."""

from __future__ import annotations

import subprocess

import pytest
from prometheus_client.parser import text_string_to_metric_families

from crawler.core.fleet import index_of, parse_sites, pick, site_folder
from crawler.errors import ConfigError
from tests.procs import CLI, child_env
from tests.sites import Site, html, read_published

# --- pure -------------------------------------------------------------------------------


def test_sites_file_lines_and_folder_names():
    text = "# the fleet\n\nhttps://a.example/ # shop\n  http://b.example:8080/docs/en/\n"
    assert parse_sites(text) == [(3, "https://a.example/"), (4, "http://b.example:8080/docs/en/")]
    assert site_folder("https://Example.com/") == "example.com"
    assert site_folder("http://b.example:8080/docs/en/") == "b.example_8080_docs_en"
    assert site_folder("http://127.0.0.1:5000/a b/../c?x=1") == "127.0.0.1_5000_a_b_.._c"
    assert "/" not in site_folder("http://h/../../etc/")
    with pytest.raises(ConfigError, match="not an http"):
        site_folder("no-host")


def test_the_index_comes_from_the_option_else_the_environment():
    assert index_of(2, {"JOB_COMPLETION_INDEX": "5"}) == 2
    assert index_of(None, {"JOB_COMPLETION_INDEX": "5"}) == 5
    with pytest.raises(ConfigError, match="JOB_COMPLETION_INDEX must be a whole number"):
        index_of(None, {"JOB_COMPLETION_INDEX": "x"})
    with pytest.raises(ConfigError, match="--sites needs --index N"):
        index_of(None, {})


def test_pick_refuses_an_index_past_the_end_and_two_sites_in_one_folder():
    sites = parse_sites("http://a/\nhttp://b/\n")
    assert pick(sites, 1, "s.txt") == ("http://b/", "b")
    with pytest.raises(ConfigError, match=r"index 2 is past the end of the sites file s\.txt"):
        pick(sites, 2, "s.txt")
    with pytest.raises(ConfigError, match="past the end"):
        pick(sites, -1, "s.txt")
    with pytest.raises(ConfigError, match="lines 1 and 2 would share the folder a"):
        pick(parse_sites("http://a/\nhttps://a/"), 0, "s.txt")


# --- through the CLI: three local sites -------------------------------------------------


def test_three_sites_by_index_each_in_its_own_folder(serve, tmp_path, xsd):
    sites = [
        Site({"/": html(f"/{name}-1", f"/{name}-2"), f"/{name}-1": html(), f"/{name}-2": html()})
        for name in ("a", "b", "c")
    ]
    servers = [serve(site.app) for site in sites]
    listing = tmp_path / "sites.txt"
    listing.write_text(
        "# three sites\n\n" + "".join(f"{srv.url}/\n" for srv in servers) + "# the end\n"
    )
    data = tmp_path / "data"
    env = child_env(SITEMAP_CRAWLER_QUIET="true")
    (tmp_path / "textfile").mkdir()  # the node exporter's folder, shared by the jobs
    for index in range(3):
        metrics = tmp_path / "textfile" / f"sitemap-{index}.prom"  # one folder for all jobs
        args = ["job", "--data", str(data), "--sites", str(listing), "--metrics", str(metrics)]
        if index == 1:  # as an Indexed Job's pod: the index from the environment
            run_env = {**env, "JOB_COMPLETION_INDEX": "1"}
        else:
            run_env = {**env, "JOB_COMPLETION_INDEX": "7"}  # the option wins
            args += ["--index", str(index)]
        done = subprocess.run([*CLI, *args], env=run_env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        exit_code = next(
            sample
            for family in text_string_to_metric_families(metrics.read_text())
            for sample in family.samples
            if sample.name == "sitemap_crawler_exit_code"
        )
        assert exit_code.labels == {"site": servers[index].url + "/", "index": str(index)}
    for name, srv, site in zip(("a", "b", "c"), servers, sites, strict=True):
        folder = data / "sites" / site_folder(srv.url + "/")
        assert folder.name == srv.url.removeprefix("http://").replace(":", "_")
        published = read_published(folder / "out", xsd)
        assert sorted(published.locs) == sorted(
            srv.url + p for p in ("/", f"/{name}-1", f"/{name}-2")
        )
        assert (folder / "state" / "crawl.sqlite").is_file()
        assert (folder / "state" / "last-report.json").is_file()
        assert len(site.paths) == len(set(site.paths))  # each site crawled once, by its run
    assert not (data / "out").exists()

    done = subprocess.run(
        [*CLI, "job", "--data", str(data), "--sites", str(listing), "--index", "3"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert f"index 3 is past the end of the sites file {listing}: it lists 3 sites" in done.stderr
