"""Screenshots of `bertkit serve`'s page in headless Chromium, as a person sees it: the server is
started on `--model`, the page is opened with a text in its link (`/?text=...`), and the
picture is written to `--output` (docs/images/serve-page.png by default).

Usage: python bench/serve_page.py --model outputs/demo --text "a warm, funny film" [--context "..."]
Needs Chromium (`apt-get install chromium`).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import urllib.parse
from pathlib import Path

from common import ROOT
from serve_load import start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--text", required=True)
    parser.add_argument("--context")
    parser.add_argument("--output", type=Path, default=ROOT / "docs/images/serve-page.png")
    parser.add_argument("--size", default="900,560")
    args = parser.parse_args()
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        sys.exit("no Chromium here: apt-get install chromium")
    process, url = start(args.model, 32)
    query = {"text": args.text, **({"context": args.context} if args.context else {})}
    try:
        subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--virtual-time-budget=15000",
             f"--window-size={args.size}", f"--screenshot={args.output.resolve()}",
             f"{url}/?{urllib.parse.urlencode(query)}"],
            check=True, capture_output=True, timeout=120,
        )
    finally:
        process.terminate()
        process.wait(60)
    print(f"written to {args.output}")


if __name__ == "__main__":
    main()
