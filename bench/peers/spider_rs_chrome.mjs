// Crawl URL with the Rust `spider` crate's Chrome mode through @spider-rs/spider-rs and write
// the links it found, one a line, to OUT. Run by bench/render_bench.py; usage:
//   CHROME=bench/peers/chromium-as-root node spider_rs_chrome.mjs URL OUT
//
// crawl(onPage, background, headless = true) renders each page in headless Chrome
// (chromiumoxide, found through $CHROME); withWaitForIdleNetwork waits for the app's fetch
// before the links are read (without it the empty shell is read and one page is found).
import { writeFileSync } from "node:fs";
import { Website } from "@spider-rs/spider-rs";

const [url, out] = process.argv.slice(2);
if (!url || !out) {
  console.error("usage: node spider_rs_chrome.mjs URL OUT");
  process.exit(2);
}
const website = new Website(url)
  .withRespectRobotsTxt(true)
  .withWaitForIdleNetwork(10, 0)
  .build();
await website.crawl(undefined, false, true);
const links = website.getLinks();
writeFileSync(out, links.join("\n") + (links.length ? "\n" : ""));
console.error(`spider-rs chrome: ${links.length} links`);
