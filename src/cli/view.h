/* view.h — the model viewer's HTTP server (view.c): `splat view` and `splat train --view`.
 * It serves web/view.html (embedded at build time) and renders on demand through the public API
 * (splat_render), so the picture is `splat render`'s; docs/view.md says why. */
#ifndef SPLAT_CLI_VIEW_H
#define SPLAT_CLI_VIEW_H

#include "splat.h"

typedef struct view_server view_server;

/* Serves ctx (configured with the dataset and backend; its model is rendered) on host:port
 * (port 0: any free one). live: the page shows training progress fed by view_progress. Prints
 * the address on stdout. NULL with a message on stderr when it cannot listen. */
view_server *view_start(splat_context *ctx, const char *host, int port, int live);
/* Stops the server (waits for the request in progress) and frees it. NULL is a no-op. */
void view_stop(view_server *v);
/* Live: the scalars of one progress report (cheap: copied under a lock, nothing rendered). */
void view_progress(view_server *v, const splat_progress *p);
/* Live: splat_train_opts.want_model; non-zero when a page is rendering and the model it has is
 * older than the refresh interval. user is the view_server. */
int view_want_model(void *user);
/* Parses "--view[=PORT]" style values: "" is the default port. -1 when not a port number. */
int view_parse_port(const char *s);
#define VIEW_DEFAULT_PORT 8080

#endif
