"""Build docs/termshark.svg: termshark, in tmux, showing the GOLEM frames of the sample
``modelling-session`` exported to pcapng and decoded with the generated dissector.

Run (needs termshark and tmux): python scripts/termshark_screenshot.py [OUTPUT.svg]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

from rich.console import Console
from rich.text import Text

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SAMPLE = os.path.join(ROOT, "recordings", "modelling-session.jsonl")
SESSION = "golem-termshark-shot"
WIDTH, HEIGHT = 132, 40


def golem_proxy(*args: str) -> None:
    env = dict(os.environ, PYTHONPATH=ROOT)
    subprocess.run([sys.executable, "-m", "golem_proxy", *args], check=True, env=env)


def upstream_port(path: str) -> str:
    """The sample's upstream port (its first route's), which the dissector is told about."""
    with open(path, encoding="utf-8") as stream:
        header = json.loads(stream.readline())
    return str(header["routes"][0]["upstream"].rsplit(":", 1)[1])


def tmux(*args: str) -> str:
    """Run tmux on a server of this script's own (its own socket), never the user's."""
    command = ["tmux", "-L", SESSION, *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def wait_for(*texts: str) -> str:
    """The pane, once it shows every one of ``texts`` (a minute at most)."""
    deadline = time.monotonic() + 60
    while True:
        screen = tmux("capture-pane", "-e", "-p", "-t", SESSION)
        plain = Text.from_ansi(screen).plain
        if all(text in plain for text in texts):
            return screen
        if time.monotonic() > deadline:
            raise SystemExit(f"termshark did not show {texts}:\n{plain}")
        time.sleep(0.3)


def shoot(output: str) -> None:
    with tempfile.TemporaryDirectory() as home:
        capture = os.path.join(home, "session.pcapng")
        # termshark runs tshark without -X: the script goes where Wireshark looks for a
        # user's plugins, in a home of its own.
        plugins = os.path.join(home, ".local", "lib", "wireshark", "plugins")
        os.makedirs(plugins)
        golem_proxy("export", SAMPLE, "--format", "pcapng", "--out", capture)
        lua = os.path.join(plugins, "golem.lua")
        golem_proxy("dissector", "--out", lua, "--port", upstream_port(SAMPLE))
        command = f"termshark -r {capture} golem"
        size = ["-x", str(WIDTH), "-y", str(HEIGHT)]
        tmux("new-session", "-d", "-s", SESSION, *size, "-e", f"HOME={home}", command)
        try:
            wait_for("golem scene.create_layer", "Frame 4:")
            tmux("send-keys", "-t", SESSION, "Down", "Down", "Down", "Down")  # to frame 8
            wait_for("Frame 8:")
            tmux("send-keys", "-t", SESSION, "Tab", "Down", "Down", "Down", "Down", "Enter")
            screen = wait_for("Method: scene.create_layer", "Id: ")
        finally:
            subprocess.run(["tmux", "-L", SESSION, "kill-server"], check=False)
    with open(os.devnull, "w") as nowhere:
        console = Console(record=True, width=WIDTH, file=nowhere)
        console.print(Text.from_ansi(screen.rstrip("\n")))
    console.save_svg(output, title="termshark — GOLEM frames of modelling-session")
    print(f"wrote {output}")


if __name__ == "__main__":
    shoot(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "docs", "termshark.svg"))
