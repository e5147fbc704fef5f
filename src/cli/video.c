/* video.c — turns numbered PNG frames into an .mp4 with ffmpeg when it is installed (a child
 * process found on PATH; never a build dependency, and its absence is not an error). */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"

extern char **environ;

static int on_path(const char *name) {
    const char *path = getenv("PATH");
    if (!path) return 0;
    char *copy = cli_strdup(path), *save = NULL;
    int found = 0;
    for (char *dir = strtok_r(copy, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
        char *p = cli_path_join(*dir ? dir : ".", name);
        found = access(p, X_OK) == 0;
        free(p);
    }
    free(copy);
    return found;
}

int cli_encode_video(const char *dir, const char *pattern, int fps, const char *out) {
    if (!on_path("ffmpeg")) return 0;
    char *input = cli_path_join(dir, pattern);
    char *tmp = cli_strfmt("%s.tmp.%ld", out, (long)getpid());
    char rate[16];
    snprintf(rate, sizeof rate, "%d", fps);
    /* even width and height, as yuv420p H.264 needs */
    char *args[] = {"ffmpeg", "-nostdin", "-y", "-loglevel", "error", "-framerate", rate, "-i", input,
                    "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2", "-c:v", "libx264", "-pix_fmt", "yuv420p",
                    "-f", "mp4", tmp, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, "ffmpeg", NULL, NULL, args, environ);
    if (rc != 0) {
        rc = cli_error("cannot start ffmpeg: %s", strerror(rc));
    } else {
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            rc = cli_error("ffmpeg failed (exit status %d) encoding %s", WIFEXITED(status) ? WEXITSTATUS(status) : -1, input);
        else if (rename(tmp, out) != 0)
            rc = cli_error("%s: cannot rename from %s: %s", out, tmp, strerror(errno));
    }
    if (rc) remove(tmp);
    free(input);
    free(tmp);
    return rc ? -1 : 1;
}
