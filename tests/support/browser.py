"""Headless Chromium for the report tests: the installed browser, and how wide a page's
tables lay out in a window of a given width.

The report forbids scripts (its Content-Security-Policy); to measure its layout a test copy
drops that policy and appends a script that writes each table's widths into the DOM, which
Chromium's ``--dump-dom`` then returns. The report itself is not changed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

_MEASURE = """<script>
for (const [i, box] of [...document.querySelectorAll('div.scroll')].entries()) {
  const t = box.querySelector('table');
  const cells = [...t.querySelectorAll('thead th')].map(c => c.textContent).join('|');
  const p = document.createElement('pre');
  p.className = 'measured';
  p.textContent = `table ${i} ${t.getBoundingClientRect().right.toFixed(0)} ` +
                  `${box.scrollWidth} ${box.clientWidth} ${window.innerWidth} ${cells}`;
  document.body.appendChild(p);
}
</script>"""


def chromium(*args: str, user_dir: Path) -> subprocess.CompletedProcess:
    """Run headless Chromium once (no network services, a profile of its own)."""
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={user_dir}", *args],
        capture_output=True, text=True, timeout=120)


def table_widths(html: str, *, width: int, work: Path) -> list[dict]:
    """Lay ``html`` out in a ``width``-pixel window; per table (``div.scroll``) return its
    right edge, its box's scroll and client widths, the window's width and its header."""
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
    page = page.replace("</body>", _MEASURE + "</body>")
    work.mkdir(parents=True, exist_ok=True)
    copy = work / "measured.html"
    copy.write_text(page)
    dom = chromium(f"--window-size={width},900", "--dump-dom", copy.as_uri(),
                   user_dir=work / "profile").stdout
    out = []
    for line in re.findall(r'<pre class="measured">(.*?)</pre>', dom):
        _, index, right, scroll, client, inner, header = line.split(" ", 6)
        out.append({"index": int(index), "right": int(right), "scroll": int(scroll),
                    "client": int(client), "window": int(inner), "header": header})
    return out
