#!/usr/bin/env python3
# check_library_rules.py ROOT — the library's promises to programs that embed it (splat.h), and
# the shape of its source tree:
#  - under ROOT/src, outside ROOT/src/cli, no call ends the process (exit, _Exit, _exit,
#    quick_exit), installs a signal handler (signal, sigaction) or sets OpenMP's thread count for
#    the process (omp_set_num_threads). Comments and string literals are ignored. Each match is
#    printed as FILE:LINE: NAME(
#  - no file under ROOT/src, ROOT/tests or ROOT/bench outside ROOT/src/backend/cpu includes a file of
#    src/backend/cpu (by "backend/cpu/...", a relative path, or <...>): that folder is the CPU backend
#    alone, reached through the kind table; the reference math every backend, the trainer and the
#    tests call is src/backend/ref. Only the CPU backend's own unit tests (CPU_BACKEND_TESTS) may.
#    Includes inside comments are ignored. Each match is printed as FILE:LINE: #include PATH
#  - the CLI is built on the public API alone: cli_includes() below.
# Exits 1 if anything is printed.
import os
import re
import sys

BANNED = re.compile(r'\b(exit|_Exit|_exit|quick_exit|signal|sigaction|omp_set_num_threads)\s*\(')
# comments and string/char literals, blanked out keeping newlines (line numbers hold)
LEXER = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]')
SOURCES = ('.c', '.h', '.cu', '.cuh')
# Tests of the CPU backend itself (not of the reference math), which may include from src/backend/cpu.
CPU_BACKEND_TESTS = {'tests/test_autothreads.c'}  # its thread-count chooser, backend/cpu/autothreads.h


def blank(m):
    return re.sub(r'[^\n]', ' ', m.group(0))


def blank_comments(m):
    return blank(m) if m.group(0).startswith('/') else m.group(0)


def walk(top):
    for d, dirs, files in os.walk(top):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(SOURCES):
                yield os.path.join(d, name)


def inside(path, folder):
    return os.path.commonpath([os.path.normpath(path), folder]) == folder


def banned_calls(root, found):
    src = os.path.join(root, 'src')
    cli = os.path.normpath(os.path.join(src, 'cli'))
    for path in walk(src):
        if inside(path, cli):
            continue
        with open(path, encoding='utf-8', errors='replace') as f:
            code = LEXER.sub(blank, f.read())
        for i, line in enumerate(code.split('\n'), 1):
            for m in BANNED.finditer(line):
                found.append('%s:%d: %s(' % (path, i, m.group(1)))


def cpu_includes(root, found):
    cpu = os.path.normpath(os.path.join(root, 'src', 'backend', 'cpu'))
    # the include paths of the build (-Isrc, -Itests) besides the including file's folder
    bases = [os.path.join(root, 'src'), os.path.join(root, 'tests')]
    for top in ('src', 'tests', 'bench'):
        for path in walk(os.path.join(root, top)):
            if inside(path, cpu) or os.path.relpath(path, root) in CPU_BACKEND_TESTS:
                continue
            with open(path, encoding='utf-8', errors='replace') as f:
                code = LEXER.sub(blank_comments, f.read())
            for i, line in enumerate(code.split('\n'), 1):
                m = INCLUDE.match(line)
                if m and any(inside(os.path.join(b, m.group(1)), cpu) for b in bases + [os.path.dirname(path)]):
                    found.append('%s:%d: #include %s' % (path, i, m.group(1)))


# The CLI (src/cli/*.c, *.h) uses the library through include/splat.h only: its quoted includes
# are "splat.h" and its own "cli/..." headers; <system> headers are its business. Comments are
# ignored. Adds FILE:LINE: #include "NAME" for each other one.
CLI_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]*)"', re.M)
COMMENTS = re.compile(r'//[^\n]*|/\*.*?\*/', re.S)


def cli_includes(root, found):
    cli = os.path.join(root, 'src', 'cli')
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


def main(root):
    found = []
    banned_calls(root, found)
    cpu_includes(root, found)
    cli_includes(root, found)
    for f in found:
        print(f)
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else '.'))
