/* interrupt.c — Ctrl-C for the `splat` program: SIGINT and SIGTERM set a flag that the train
 * command's cancel callback reads; a second signal ends the process at once. Signal handling is
 * the program's business: the library installs no handler (it takes cancel callbacks). */
#include <signal.h>
#include <string.h>

#include "cli/cli.h"

static volatile sig_atomic_t g_interrupted;

static void on_signal(int sig) {
    if (g_interrupted) {
        signal(sig, SIG_DFL); /* a second Ctrl-C ends the process at once */
        raise(sig);
    }
    g_interrupted = 1;
}

void sp_install_interrupt_handler(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

bool sp_interrupted(void) { return g_interrupted != 0; }
void sp_set_interrupted(bool v) { g_interrupted = v; }
