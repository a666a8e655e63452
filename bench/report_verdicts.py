"""The report's disclosure-policy verdict as a review board sees it: met, refused and judged by nothing, each
rendered by headless Chromium, its box's computed colour and edge read off the page and a screenshot kept.

Three runs of the DPMPM on one small simulated file (200 records, the pipeline tests' settings), the same
posterior each time, under three policies: the default (met), one asking an expected match risk of at most 0
(refused; the report stays in ``private/``, no ``release/``) and one that only reports (judged by nothing). The
three boxes must differ in colour, and the unjudged one must not be the met one's green.

Below the public API: ``bayessdc.models.dpmpm.simulate_latent_class`` draws the small file from the DPMPM's own
latent-class model, so that the met run is met by construction, not by the luck of a real extract.

Needs Debian's Chromium (``apt-get install chromium``, ``/usr/bin/chromium``) and Playwright for Python in an
environment of its own (``python -m venv envs/browser && envs/browser/bin/pip install playwright``; Playwright
drives the system Chromium, it downloads no browser). Run as::

    .venv/bin/python bench/report_verdicts.py --browser-python envs/browser/bin/python --out /tmp/verdicts

Prints one row per verdict (its class, background, left edge) and exits 1 when two verdicts look the same.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

POLICIES = {
    "refused": '[policy]\nname = "impossible"\ndescription = "an expected match risk of at most 0"\n'
    '[[criterion]]\nmeasure = "expected_match_risk"\nsubset = "*"\nat_most = 0\nsource = "bench: refused"\n',
    "judged by nothing": '[policy]\nname = "reported only"\ndescription = "every figure reported, none judged"\n'
    '[[reported]]\nmeasure = "expected_match_risk"\nwhy = "bench: reported only"\n',
}

# Run in the browser environment: open each report, read the policy verdict's computed style, screenshot it.
BROWSER = r"""
import json, sys
from playwright.sync_api import sync_playwright
pages = json.loads(sys.argv[1])
flags = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
out = {}
with sync_playwright() as p:
    browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=flags)
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    for label, (report, shot) in pages.items():
        page.goto("file://" + report)
        box = page.locator("h2:has-text('Disclosure policy') + div.verdict").first
        out[label] = box.evaluate("e => { const s = getComputedStyle(e); return {klass: e.className, "
                                  "background: s.backgroundColor, edge: s.borderLeftStyle + ' ' + "
                                  "s.borderLeftColor, text: e.textContent.slice(0, 90)}; }")
        box.screenshot(path=shot)
    browser.close()
print(json.dumps(out))
"""


def _runs(out: Path) -> dict[str, Path]:
    """The three runs' reports (``private/report.html``), by verdict."""
    import bayessdc as bsd
    from bayessdc.models.dpmpm import simulate_latent_class

    frame, _ = simulate_latent_class(200, [2, 4, 30], [0.5, 0.3, 0.2], seed=3, concentration=0.4)
    frame = frame.rename(columns={"x0": "gender", "x1": "age", "x2": "county"})
    frame["county"] = "c" + frame["county"].astype(str)
    recipe = bsd.DPMPM(K=6, settings=bsd.GibbsSettings(draws=400, burn=100, chains=8, thin=2), repetitions=5,
                       risk_records=20, risk_draws=50)  # fmt: skip
    reports = {}
    for label in ("met", *POLICIES):
        policy = None
        if label in POLICIES:
            policy = out / f"{label.replace(' ', '_')}.toml"
            policy.write_text(POLICIES[label])
        folder = out / label.replace(" ", "_")
        try:
            bsd.synthesize(frame, recipe, synthesize=["county"], keep=["gender", "age"], m=3, seed=3, out=folder,
                           policy=policy, progress=False)  # fmt: skip
        except bsd.DisclosureRefused:
            pass
        assert (folder / "release").exists() == (label != "refused"), label
        reports[label] = folder / "private" / "report.html"
    return reports


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--browser-python", default="envs/browser/bin/python",
                        help="a Python with Playwright installed")  # fmt: skip
    parser.add_argument("--out", type=Path, default=None, help="folder for the runs and screenshots")
    args = parser.parse_args()
    if not Path("/usr/bin/chromium").exists() or not Path(args.browser_python).exists():
        print("skipped: needs /usr/bin/chromium and a Python with Playwright (see the docstring)")
        return 0
    out = args.out or Path(tempfile.mkdtemp(prefix="verdicts-"))
    out.mkdir(parents=True, exist_ok=True)
    reports = _runs(out)
    pages = {k: [str(v.resolve()), str((out / f"{k.replace(' ', '_')}.png").resolve())] for k, v in reports.items()}
    done = subprocess.run([args.browser_python, "-c", BROWSER, json.dumps(pages)], capture_output=True, text=True)
    if done.returncode:
        print(done.stderr, file=sys.stderr)
        return 1
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{'verdict':<18} {'class':<18} {'background':<20} {'left edge':<28} text")
    for label, style in seen.items():
        print(f"{label:<18} {style['klass']:<18} {style['background']:<20} {style['edge']:<28} {style['text']!r}")
    looks = {(s["background"], s["edge"]) for s in seen.values()}
    print(f"screenshots: {', '.join(p[1] for p in pages.values())}")
    distinct = len(looks) == len(seen)
    print("three distinct looks" if distinct else "two verdicts look the same")
    return 0 if distinct else 1


if __name__ == "__main__":
    sys.exit(main())
