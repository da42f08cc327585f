"""The one-page HTML report: one file that opens offline, and what a real browser renders of it."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cyclesim.cli import main

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "tests" / "cases" / "worked" / "03_single_buffer"
FILES = [str(CASE / f"{part}.yaml") for part in ("arch", "workload", "mapping")]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("html") / "report.html"
    assert main(["run", *FILES, "--html", str(out), "-q"]) == 0
    return out


def test_the_page_is_one_file_with_every_section_and_nothing_fetched(page):
    text = page.read_text(encoding="utf-8")
    # nothing from a network: no external script, style, font or image
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert "<link" not in text and "@import" not in text
    for heading in ("Summary", "Non-compute cycles by cause and where", "Timeline",
                    "Accesses", "Energy", "Plots"):  # fmt: skip
        assert f"<h2>{heading}</h2>" in text
    # case 03's numbers (8 onload + 16 compute + 24 stall + 4 offload = 52, all bandwidth of A
    # through DRAM.dram_rd or of Z through DRAM.dram_wr), read from the result, not re-derived
    assert '<td>cycles</td><td class="n">52</td>' in text
    assert text.count("<td>bandwidth</td>") == 3 and "A@abuf" in text and "12..44" in text
    assert text.count('src="data:image/png;base64,') == 5  # the five plots, inline


def test_a_saved_run_gives_the_same_page(page, tmp_path, capsys):
    saved = tmp_path / "run.json"
    assert main(["run", *FILES, "--save-run", str(saved), "-q"]) == 0
    assert main(["report", str(saved), "--no-progress"]) == 0
    written = tmp_path / "run.html"
    out = capsys.readouterr()  # named on stderr, as `run` names what it wrote
    assert out.out == "" and out.err.strip() == f"cyclesim: wrote {written}"
    assert written.read_bytes() == page.read_bytes()
    # a missing folder is made, as `run --html` makes it (it failed after the replay)
    assert main(["report", str(saved), "--no-progress", "--html", str(tmp_path / "new" / "r.html")]) == 0  # fmt: skip
    assert (tmp_path / "new" / "r.html").read_bytes() == page.read_bytes()


@pytest.mark.parametrize("given", ["arch.yaml", "mapping.yaml"])
def test_report_of_an_input_file_says_it_is_not_a_saved_run(given, capsys):
    """An architecture or mapping given to `report` was read as '-' or as an architecture."""
    assert main(["report", str(CASE / given), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and f"{given}: not a saved run" in err
    assert "cyclesim-run/1" in err


def _numbers(text: str) -> list[str]:
    """The numbers of a text report line, as written (thousands separators)."""
    return re.findall(r"\d[\d,.]*", text)


def test_the_page_has_the_dram_counts_and_timing_of_the_text_report(tmp_path, capsys):
    """A run with a DRAM model: its requests, row hits, activates, refreshes and which model
    timed it were in the text report only."""
    files = [str(ROOT / "hw_models" / "tpu_like_ddr4.yaml")] + [
        str(ROOT / "examples" / "resnet50_dram" / f"{p}.yaml") for p in ("workload", "mapping")
    ]
    page = tmp_path / "dram.html"
    assert main(["run", *files, "--html", str(page), "--no-progress"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if " requests, row hits " in x)
    text = page.read_text(encoding="utf-8")
    section = text[text.index("<h2>DRAM</h2>") : text.index("<h2>Energy</h2>")]
    assert "<td>DDR4_8Gb_x8_2400</td>" in section and "timing: closed-form timer" in section
    requests, hits, rate, activates, refreshes = _numbers(line.split(": ", 1)[1])
    for number in (requests, hits, activates, refreshes):
        assert f'<td class="n">{number}</td>' in section
    assert f'<td class="n">{rate} %</td>' in section


def test_the_page_has_the_energy_of_the_text_report_in_its_number_format(tmp_path, capsys):
    """The energy showed as '1.6384e+07' beside '262,144', and by component only."""
    files = [str(ROOT / "hw_models" / "simple_3level.yaml")] + [
        str(ROOT / "examples" / "simple_3level" / f"{p}.yaml") for p in ("workload", "mapping")
    ]
    saved = tmp_path / "run.json"
    assert main(["run", *files, "--save-run", str(saved), "--no-progress"]) == 0
    report = capsys.readouterr().out
    energy = report[report.index("\nenergy (") + 1 :].splitlines()[1:]
    assert main(["report", str(saved), "--no-progress"]) == 0
    text = (tmp_path / "run.html").read_text(encoding="utf-8")
    section = text[text.index("<h2>Energy</h2>") : text.index("<h2>Plots</h2>")]
    assert "e+" not in section and "16,384,000" in section
    for line in energy:  # every heading and row of the text report's energy, the same numbers
        if line.endswith("):"):
            assert f"<h3>{line.strip().split(' (')[0]}</h3>" in section
        else:
            name, value, share = line.strip().rsplit(maxsplit=2)
            row = f'<td>{name}</td><td class="n">{value}</td><td class="n">{share[:-1]} %</td>'
            assert row in section


def test_a_page_needs_the_html_suffix(tmp_path, capsys):
    assert main(["run", *FILES, "--html", str(tmp_path / "report.txt"), "-q"]) == 2
    assert ".html" in capsys.readouterr().err and not (tmp_path / "report.txt").exists()


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium: `make browser-deps` installs it")
def test_headless_chromium_renders_the_timeline(page, tmp_path):
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,1600"]
    url = page.resolve().as_uri()
    dom = subprocess.run(
        [CHROMIUM, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120
    ).stdout
    # the script ran: it marks the canvas drawn, over the whole run, and builds the legend
    assert 'data-rendered="yes"' in dom and 'data-window="0..52"' in dom
    legend = re.search(r'<div class="legend" id="timeline-legend">(.*?)</div>', dom).group(1)
    assert "compute" in legend and "bandwidth" in legend and "port busy" in legend
    shot = tmp_path / "report.png"
    subprocess.run(
        [CHROMIUM, *flags, f"--screenshot={shot}", url], capture_output=True, timeout=120
    )
    from PIL import Image

    image = Image.open(shot).convert("RGB")
    pixels = {image.getpixel((x, y)) for x in range(0, image.width, 2) for y in range(image.height)}
    # compute's green and bandwidth's orange (views/plots.py) are on the screen
    assert (0x00, 0x9E, 0x73) in pixels and (0xD5, 0x5E, 0x00) in pixels


def test_a_saved_run_whose_replay_differs_is_refused(tmp_path, capsys):
    """A saved run edited to 12,345 cycles: `report` wrote the replayed run's page without a
    word, while `explain` refused the file; both refuse it now, in one line, nothing written."""
    import json

    saved = tmp_path / "run.json"
    assert main(["run", *FILES, "--save-run", str(saved), "-q"]) == 0
    doc = json.loads(saved.read_text())
    doc["cycles"] = 12345
    saved.write_text(json.dumps(doc))
    assert main(["report", str(saved), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and "the saved run had 12,345 cycles" in err
    assert not (tmp_path / "run.html").exists()
