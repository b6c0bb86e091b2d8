"""README's cakec and cakectl command lines, tried against the real binaries and a real caked
(no GPU): a line with placeholders (FILE, ID, `...`, `[options]`) must name verbs that exist (the
verb's own --help answers for it); a concrete line runs and must exit 0. A renamed verb, a wrong
operation name or a dropped flag in README then fails here.

Run by CTest with CAKED_PATH, CAKECTL_PATH, CAKEC_PATH and CAKE_SOURCE_DIR set.
"""
import os
import shutil
import re
import shlex
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from python_client_test import SOURCE, Daemon  # noqa: E402

BINARIES = {"cakectl": os.environ.get("CAKECTL_PATH", "cakectl"),
            "cakec": os.environ.get("CAKEC_PATH", "cakec")}
# Inline `cakectl ...` spans and code-block lines that start with a command.
INLINE = re.compile(r"`((?:\./build/bin/|build/bin/)?cakec(?:tl)? [^`]*)`")
BLOCK = re.compile(r"^ {4}(?:\$ )?((?:\./build/bin/|build/bin/)?cakec(?:tl)? .*?)\s*(?:#.*)?$")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]+$|\.\.\.|[\[\]|<>()]")


def readme_commands():
    """(line number, command text, synopsis continuation verbs) in README order."""
    with open(os.path.join(SOURCE, "README.md"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    out = []
    for n, line in enumerate(lines, 1):
        block = BLOCK.match(line)
        if block:
            out.append((n, block.group(1)))
            # A synopsis: its verbs are on the deeper-indented lines after it, "a | b X | c".
            if "[--server" in block.group(1):
                for m, more in enumerate(lines[n:], n + 1):
                    if not more.startswith("      "):
                        break
                    for alternative in more.split(" | "):
                        words = alternative.split()
                        if words and re.match(r"^[a-z][a-z-]+$", words[0]):
                            out.append((m, f"{block.group(1).split()[0]} {alternative.strip()}"))
            continue
        for span in INLINE.findall(line):
            out.append((n, span))
    return out


def verb_path(tokens):
    """The leading subcommand words of a command (after the binary and global options)."""
    verbs, i = [], 1
    while i < len(tokens):
        t = tokens[i]
        if t.startswith("-"):
            # A global option with a value (--server X) or a flag; the verbs follow.
            if not verbs and t in ("--server", "--token-file", "--tls-ca", "--tls-cert",
                                   "--tls-key", "-o", "--output", "--config"):
                i += 2
                continue
            break
        if not re.match(r"^[a-z][a-z-]*$", t) or PLACEHOLDER.search(t):
            break
        verbs.append(t)
        i += 1
    return verbs


class ReadmeCommandsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()
        cls.env = dict(os.environ, CAKE_ADDR=cls.daemon.address,
                       CAKE_TOKEN_FILE=os.path.join(cls.daemon.state, "tokens", "operator"))
        cls.work = tempfile.mkdtemp(prefix="cake-readme.")

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()
        shutil.rmtree(cls.work, ignore_errors=True)

    def run_tool(self, tokens):
        binary = os.path.basename(tokens[0])
        argv = [BINARIES[binary]] + tokens[1:]
        return subprocess.run(argv, cwd=SOURCE, env=self.env, capture_output=True, text=True,
                              timeout=120)

    def declared_verbs(self, binary, words):
        """The longest prefix of `words` that `binary` declares as nested verbs (its help's
        usage line names them)."""
        for k in range(len(words), 0, -1):
            r = self.run_tool([binary, *words[:k], "--help"])
            usage = next((u for u in r.stdout.splitlines() if u.startswith("Usage: ")), "")
            if re.match(r"Usage: (\S*cakec(tl)? )?" + re.escape(" ".join(words[:k])) + " ", usage):
                return words[:k]
        return []

    def test_every_command_line_of_readme(self):
        commands = readme_commands()
        self.assertGreater(len(commands), 20, "the README's commands were not found")
        tried = 0
        for line, text in commands:
            with self.subTest(line=line, command=text):
                tokens = shlex.split(text.replace("<(", "").replace(")", " "))
                binary = os.path.basename(tokens[0])
                words = verb_path(tokens)
                verbs = self.declared_verbs(tokens[0], words) if words else []
                self.assertEqual(len(verbs) > 0 or not words, True,
                                 f"README line {line}: '{binary} {words[0] if words else ''}' "
                                 f"is not a verb of {binary}")
                placeholders = any(PLACEHOLDER.search(t) for t in tokens[1:])
                # A placeholder, or nothing but verbs (README naming a verb in prose, or a
                # command with no arguments): checking the verbs is all; a concrete command with
                # arguments runs and must succeed.
                if not (placeholders or tokens[-1] == "--help" or len(tokens) == 1 + len(verbs)
                        or "--server" in tokens):  # --server: a remote daemon the README imagines
                    if "--out" in tokens:  # written files go to a scratch folder
                        at = tokens.index("--out") + 1
                        tokens[at] = os.path.join(self.work, os.path.basename(tokens[at]))
                    r = self.run_tool(tokens)
                    self.assertEqual(r.returncode, 0,
                                     f"README line {line}: {text}\n{r.stdout}\n{r.stderr}")
                tried += 1
        self.assertGreater(tried, 20)

if __name__ == "__main__":
    unittest.main()
