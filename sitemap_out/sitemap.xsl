<?xml version="1.0" encoding="UTF-8"?>
<!--
  sitemap.xsl, published by sitemap-crawler beside the sitemap files that name it.

  A browser that opens sitemap.xml (or a part, or the news sitemap) runs this XSLT 1.0 and
  shows a table a person can read, sort and search instead of raw XML. Search engines ignore
  the xml-stylesheet instruction and read the XML as it is. Everything the page needs is in
  here: no external style, script or font, so it works offline and under any prefix.
-->
<xsl:stylesheet version="1.0"
    xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:s="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"
    xmlns:video="http://www.google.com/schemas/sitemap-video/1.1"
    xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"
    xmlns:xhtml="http://www.w3.org/1999/xhtml"
    exclude-result-prefixes="s image video news xhtml">

  <xsl:output method="html" encoding="UTF-8" indent="no" doctype-system="about:legacy-compat"/>

  <xsl:template match="/">
    <xsl:variable name="index" select="boolean(s:sitemapindex)"/>
    <xsl:variable name="count" select="count(s:urlset/s:url | s:sitemapindex/s:sitemap)"/>
    <html lang="en">
      <head>
        <meta charset="utf-8"/>
        <meta name="viewport" content="width=device-width, initial-scale=1"/>
        <title>
          <xsl:choose>
            <xsl:when test="$index">Sitemap index: </xsl:when>
            <xsl:otherwise>Sitemap: </xsl:otherwise>
          </xsl:choose>
          <xsl:value-of select="$count"/>
          <xsl:choose>
            <xsl:when test="$index and $count = 1"> sitemap</xsl:when>
            <xsl:when test="$index"> sitemaps</xsl:when>
            <xsl:when test="$count = 1"> URL</xsl:when>
            <xsl:otherwise> URLs</xsl:otherwise>
          </xsl:choose>
        </title>
        <style><![CDATA[
          :root { color-scheme: light dark; --line: #8884; --head: #f4f6f8; --accent: #1a5fb4; }
          @media (prefers-color-scheme: dark) { :root { --head: #1e2329; --accent: #78aeed; } }
          body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
                 margin: 0 auto; padding: 24px; max-width: 1400px; }
          h1 { font-size: 24px; margin: 0 0 4px; }
          p.intro { margin: 0 0 16px; color: GrayText; }
          a { color: var(--accent); }
          .tools { display: flex; flex-wrap: wrap; gap: 8px 12px; align-items: center;
                   margin: 0 0 12px; }
          .tools input { font: inherit; padding: 4px 8px; width: min(320px, 70vw); }
          .scroll { overflow-x: auto; }
          table { border-collapse: collapse; width: 100%; }
          th, td { border-bottom: 1px solid var(--line); padding: 5px 8px; text-align: left;
                   vertical-align: top; }
          thead th { position: sticky; top: 0; background: var(--head); white-space: nowrap; }
          th button { font: inherit; font-weight: 600; border: 0; background: none; padding: 0;
                      color: inherit; cursor: pointer; }
          th[aria-sort=ascending] button::after { content: " \25B2"; }
          th[aria-sort=descending] button::after { content: " \25BC"; }
          td.url { word-break: break-all; min-width: 16em; }
          td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
          tr > :first-child { width: 1%; white-space: nowrap; }
          td.date { white-space: nowrap; font-variant-numeric: tabular-nums; }
          #more { font: inherit; margin: 12px 0; padding: 4px 12px; }
          #more[hidden] { display: none; }
        ]]></style>
      </head>
      <body>
        <xsl:choose>
          <xsl:when test="$index"><xsl:apply-templates select="s:sitemapindex"/></xsl:when>
          <xsl:when test="s:urlset"><xsl:apply-templates select="s:urlset"/></xsl:when>
          <xsl:otherwise>
            <h1>Not a sitemap</h1>
            <p class="intro">The root element is neither a urlset nor a sitemapindex of
              sitemaps.org 0.9.</p>
          </xsl:otherwise>
        </xsl:choose>
        <script><![CDATA[
(function () {
  "use strict";
  // Rows are drawn a page at a time: laying out the 50,000 rows a sitemap may hold takes a
  // browser half a minute, a page of them a moment. Sort and search work on every row.
  var PAGE = 1000;
  var table = document.getElementById("sitemap");
  if (!table) return;
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var texts = rows.map(function (row) { return row.textContent.toLowerCase(); });
  var order = rows.map(function (row, at) { return at; });
  var limit = PAGE;
  var search = document.getElementById("search");
  var shown = document.getElementById("shown");
  var more = document.createElement("button");
  more.type = "button";
  more.id = "more";
  more.textContent = "Show " + PAGE.toLocaleString("en") + " more";
  table.parentNode.insertAdjacentElement("afterend", more);

  function draw() {
    var words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    var matching = !words.length ? order : order.filter(function (at) {
      return words.every(function (word) { return texts[at].indexOf(word) !== -1; });
    });
    var fragment = document.createDocumentFragment();
    var count = Math.min(limit, matching.length);
    for (var i = 0; i < count; i++) fragment.appendChild(rows[matching[i]]);
    body.textContent = "";
    body.appendChild(fragment);
    var total = rows.length.toLocaleString("en");
    var said = words.length ? matching.length.toLocaleString("en") + " of " + total + " match" : "";
    if (count < matching.length) {
      said = "showing " + count.toLocaleString("en") + " of " +
        (words.length ? matching.length.toLocaleString("en") + " matching" : total);
    }
    shown.textContent = said;
    more.hidden = count >= matching.length;
  }

  function sortBy(th, column) {
    var numeric = th.getAttribute("data-type") === "number";
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    var keys = rows.map(function (row) {
      var text = row.cells[column].textContent;
      return numeric ? parseFloat(text) || 0 : text;
    });
    order.sort(function (a, b) {
      var by = keys[a] < keys[b] ? -1 : keys[a] > keys[b] ? 1 : 0;
      return (ascending ? by : -by) || a - b;
    });
    var heads = table.tHead.rows[0].cells;
    for (var i = 0; i < heads.length; i++) heads[i].removeAttribute("aria-sort");
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    draw();
  }

  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
    var button = th.querySelector("button");
    if (button) button.addEventListener("click", function () { sortBy(th, column); });
  });
  search.addEventListener("input", function () { limit = PAGE; draw(); });
  more.addEventListener("click", function () { limit += PAGE; draw(); });
  draw();
})();
        ]]></script>
      </body>
    </html>
  </xsl:template>

  <!-- The tools above a table: the search field and how many rows it leaves. -->
  <xsl:template name="tools">
    <xsl:param name="what"/>
    <div class="tools">
      <label>Search <input id="search" type="search" placeholder="{$what}" autocomplete="off"/></label>
      <span id="shown" aria-live="polite"></span>
    </div>
  </xsl:template>

  <!-- A sortable column heading. -->
  <xsl:template name="head">
    <xsl:param name="label"/>
    <xsl:param name="type" select="'text'"/>
    <th data-type="{$type}">
      <xsl:if test="$type = 'number'"><xsl:attribute name="class">n</xsl:attribute></xsl:if>
      <button type="button"><xsl:value-of select="$label"/></button>
    </th>
  </xsl:template>

  <!-- A URL as a link when it is an http(s) URL, as text otherwise. -->
  <xsl:template name="link">
    <xsl:param name="url"/>
    <td class="url">
      <xsl:choose>
        <xsl:when test="starts-with($url, 'https://') or starts-with($url, 'http://')">
          <a href="{$url}"><xsl:value-of select="$url"/></a>
        </xsl:when>
        <xsl:otherwise><xsl:value-of select="$url"/></xsl:otherwise>
      </xsl:choose>
    </td>
  </xsl:template>

  <xsl:template match="s:urlset">
    <xsl:variable name="lastmod" select="boolean(s:url/s:lastmod)"/>
    <xsl:variable name="changefreq" select="boolean(s:url/s:changefreq)"/>
    <xsl:variable name="priority" select="boolean(s:url/s:priority)"/>
    <xsl:variable name="images" select="boolean(s:url/image:image)"/>
    <xsl:variable name="videos" select="boolean(s:url/video:video)"/>
    <xsl:variable name="alternates" select="boolean(s:url/xhtml:link)"/>
    <xsl:variable name="news" select="boolean(s:url/news:news)"/>
    <h1>
      <xsl:choose>
        <xsl:when test="$news">News sitemap</xsl:when>
        <xsl:otherwise>Sitemap</xsl:otherwise>
      </xsl:choose>
    </h1>
    <p class="intro">
      <span id="total"><xsl:value-of select="count(s:url)"/></span>
      <xsl:text> URL</xsl:text>
      <xsl:if test="count(s:url) != 1">s</xsl:if>
      <xsl:text>. This XML sitemap is for search engines; this table is how a browser shows it.</xsl:text>
    </p>
    <xsl:call-template name="tools">
      <xsl:with-param name="what">URL, date or title</xsl:with-param>
    </xsl:call-template>
    <div class="scroll"><table id="sitemap" data-kind="urlset">
      <thead>
        <tr>
          <xsl:call-template name="head">
            <xsl:with-param name="label">#</xsl:with-param>
            <xsl:with-param name="type">number</xsl:with-param>
          </xsl:call-template>
          <xsl:call-template name="head"><xsl:with-param name="label">URL</xsl:with-param></xsl:call-template>
          <xsl:if test="$lastmod">
            <xsl:call-template name="head"><xsl:with-param name="label">Last modified</xsl:with-param></xsl:call-template>
          </xsl:if>
          <xsl:if test="$changefreq">
            <xsl:call-template name="head"><xsl:with-param name="label">Change frequency</xsl:with-param></xsl:call-template>
          </xsl:if>
          <xsl:if test="$priority">
            <xsl:call-template name="head">
              <xsl:with-param name="label">Priority</xsl:with-param>
              <xsl:with-param name="type">number</xsl:with-param>
            </xsl:call-template>
          </xsl:if>
          <xsl:if test="$images">
            <xsl:call-template name="head">
              <xsl:with-param name="label">Images</xsl:with-param>
              <xsl:with-param name="type">number</xsl:with-param>
            </xsl:call-template>
          </xsl:if>
          <xsl:if test="$videos">
            <xsl:call-template name="head">
              <xsl:with-param name="label">Videos</xsl:with-param>
              <xsl:with-param name="type">number</xsl:with-param>
            </xsl:call-template>
          </xsl:if>
          <xsl:if test="$alternates">
            <xsl:call-template name="head">
              <xsl:with-param name="label">Alternates</xsl:with-param>
              <xsl:with-param name="type">number</xsl:with-param>
            </xsl:call-template>
          </xsl:if>
          <xsl:if test="$news">
            <xsl:call-template name="head"><xsl:with-param name="label">News title</xsl:with-param></xsl:call-template>
            <xsl:call-template name="head"><xsl:with-param name="label">Published</xsl:with-param></xsl:call-template>
          </xsl:if>
        </tr>
      </thead>
      <tbody>
        <xsl:for-each select="s:url">
          <tr>
            <td class="n"><xsl:value-of select="position()"/></td>
            <xsl:call-template name="link">
              <xsl:with-param name="url" select="normalize-space(s:loc)"/>
            </xsl:call-template>
            <xsl:if test="$lastmod"><td class="date"><xsl:value-of select="s:lastmod"/></td></xsl:if>
            <xsl:if test="$changefreq"><td><xsl:value-of select="s:changefreq"/></td></xsl:if>
            <xsl:if test="$priority"><td class="n"><xsl:value-of select="s:priority"/></td></xsl:if>
            <xsl:if test="$images"><td class="n"><xsl:value-of select="count(image:image)"/></td></xsl:if>
            <xsl:if test="$videos"><td class="n"><xsl:value-of select="count(video:video)"/></td></xsl:if>
            <xsl:if test="$alternates"><td class="n"><xsl:value-of select="count(xhtml:link)"/></td></xsl:if>
            <xsl:if test="$news">
              <td><xsl:value-of select="news:news/news:title"/></td>
              <td class="date"><xsl:value-of select="news:news/news:publication_date"/></td>
            </xsl:if>
          </tr>
        </xsl:for-each>
      </tbody>
    </table></div>
  </xsl:template>

  <xsl:template match="s:sitemapindex">
    <h1>Sitemap index</h1>
    <p class="intro">
      <span id="total"><xsl:value-of select="count(s:sitemap)"/></span>
      <xsl:text> sitemap</xsl:text>
      <xsl:if test="count(s:sitemap) != 1">s</xsl:if>
      <xsl:text>. This index is for search engines; follow a link to see the URLs a sitemap lists.</xsl:text>
    </p>
    <xsl:call-template name="tools">
      <xsl:with-param name="what">sitemap or date</xsl:with-param>
    </xsl:call-template>
    <div class="scroll"><table id="sitemap" data-kind="sitemapindex">
      <thead>
        <tr>
          <xsl:call-template name="head">
            <xsl:with-param name="label">#</xsl:with-param>
            <xsl:with-param name="type">number</xsl:with-param>
          </xsl:call-template>
          <xsl:call-template name="head"><xsl:with-param name="label">Sitemap</xsl:with-param></xsl:call-template>
          <xsl:call-template name="head"><xsl:with-param name="label">Last modified</xsl:with-param></xsl:call-template>
        </tr>
      </thead>
      <tbody>
        <xsl:for-each select="s:sitemap">
          <tr>
            <td class="n"><xsl:value-of select="position()"/></td>
            <xsl:call-template name="link">
              <xsl:with-param name="url" select="normalize-space(s:loc)"/>
            </xsl:call-template>
            <td class="date"><xsl:value-of select="s:lastmod"/></td>
          </tr>
        </xsl:for-each>
      </tbody>
    </table></div>
  </xsl:template>
</xsl:stylesheet>
