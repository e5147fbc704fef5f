#!/usr/bin/env python3
# check_library_rules.py ROOT — the library's promises to programs that embed it (splat.h):
# under ROOT/src, outside ROOT/src/cli, no call ends the process (exit, _Exit, _exit,
# quick_exit), installs a signal handler (signal, sigaction) or sets OpenMP's thread count for
# the process (omp_set_num_threads). Comments and string literals are ignored. Prints each
# match as FILE:LINE: NAME( and exits 1 if there is any.
# And the CLI is built on the public API alone: cli_includes() below.
import os
import re
import sys

BANNED = re.compile(r'\b(exit|_Exit|_exit|quick_exit|signal|sigaction|omp_set_num_threads)\s*\(')
# comments and string/char literals, blanked out keeping newlines (line numbers hold)
LEXER = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def blank(m):
    return re.sub(r'[^\n]', ' ', m.group(0))


# The CLI (src/cli/*.c, *.h) uses the library through include/splat.h only: its quoted includes
# are "splat.h" and its own "cli/..." headers; <system> headers are its business. Comments are
# ignored. Returns FILE:LINE: #include "NAME" for each other one.
CLI_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]*)"', re.M)
COMMENTS = re.compile(r'//[^\n]*|/\*.*?\*/', re.S)


def cli_includes(root):
    cli = os.path.join(root, 'src', 'cli')
    found = []
    for d, dirs, files in os.walk(cli):
        dirs.sort()
        for name in sorted(files):
            if not name.endswith(('.c', '.h')):
                continue
            path = os.path.join(d, name)
            with open(path, encoding='utf-8', errors='replace') as f:
                code = COMMENTS.sub(blank, f.read())
            for m in CLI_INCLUDE.finditer(code):
                inc = m.group(1)
                if inc == 'splat.h' or (inc.startswith('cli/') and '..' not in inc):
                    continue
                found.append('%s:%d: #include "%s"' % (path, code.count('\n', 0, m.start()) + 1, inc))
    return found


def main(root):
    src = os.path.join(root, 'src')
    cli = os.path.normpath(os.path.join(src, 'cli'))
    found = []
    for d, dirs, files in os.walk(src):
        dirs.sort()
        if os.path.commonpath([os.path.normpath(d), cli]) == cli:
            continue
        for name in sorted(files):
            if not name.endswith(('.c', '.h', '.cu', '.cuh')):
                continue
            path = os.path.join(d, name)
            with open(path, encoding='utf-8', errors='replace') as f:
                code = LEXER.sub(blank, f.read())
            for i, line in enumerate(code.split('\n'), 1):
                for m in BANNED.finditer(line):
                    found.append('%s:%d: %s(' % (path, i, m.group(1)))
    found += cli_includes(root)
    for f in found:
        print(f)
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else '.'))
