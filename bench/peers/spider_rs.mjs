// Crawl URL with the Rust `spider` crate through @spider-rs/spider-rs and write the links it
// found, one a line, to OUT. Run by bench/crawl_bench.py; usage: node spider_rs.mjs URL OUT
//
// This is the configuration the issue names, nothing tuned: respect robots.txt, build, crawl.
// The crate keeps to the start URL's host by default (no subdomains, no TLD).
import { writeFileSync } from "node:fs";
import { Website } from "@spider-rs/spider-rs";

const [url, out] = process.argv.slice(2);
if (!url || !out) {
  console.error("usage: node spider_rs.mjs URL OUT");
  process.exit(2);
}
const website = new Website(url).withRespectRobotsTxt(true).build();
await website.crawl();
const links = website.getLinks();
writeFileSync(out, links.join("\n") + (links.length ? "\n" : ""));
console.error(`spider-rs: ${links.length} links`);
