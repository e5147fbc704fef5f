/* cameras_json.c — writes the original 3DGS cameras.json (layout in cameras_json.h) with cJSON. */
#include "io/cameras_json.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

/* "./train/r_0.png" -> "r_0" (malloc'd). */
static char *image_stem(const char *name) {
    const char *slash = strrchr(name, '/');
    char *s = sp_strdup(slash ? slash + 1 : name);
    char *dot = strrchr(s, '.');
    if (dot && dot != s) *dot = 0;
    return s;
}

static cJSON *camera_entry(int id, const sp_view *v) {
    const sp_camera *c = &v->cam;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", id);
    char *stem = image_stem(v->name);
    cJSON_AddStringToObject(o, "img_name", stem);
    free(stem);
    cJSON_AddNumberToObject(o, "width", c->width);
    cJSON_AddNumberToObject(o, "height", c->height);
    float centre[3];
    sp_camera_center(c, centre);
    cJSON *pos = cJSON_AddArrayToObject(o, "position");
    for (int k = 0; k < 3; k++) cJSON_AddItemToArray(pos, cJSON_CreateNumber(centre[k]));
    cJSON *rot = cJSON_AddArrayToObject(o, "rotation");
    for (int i = 0; i < 3; i++) {
        cJSON *row = cJSON_CreateArray();
        for (int j = 0; j < 3; j++) cJSON_AddItemToArray(row, cJSON_CreateNumber(c->R[3 * j + i])); /* R^T */
        cJSON_AddItemToArray(rot, row);
    }
    cJSON_AddNumberToObject(o, "fy", c->fy);
    cJSON_AddNumberToObject(o, "fx", c->fx);
    return o;
}

int sp_cameras_json_write(const char *path, const sp_dataset *d) {
    cJSON *arr = cJSON_CreateArray();
    const sp_split *splits[3] = {&d->test, &d->val, &d->train};
    int id = 0;
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < splits[s]->n; i++) cJSON_AddItemToArray(arr, camera_entry(id++, &splits[s]->views[i]));
    char *text = cJSON_Print(arr);
    cJSON_Delete(arr);
    if (!text) return sp_error("%s: cannot format the cameras as JSON", path);
    int rc = sp_write_file_atomic(path, text, strlen(text));
    cJSON_free(text);
    return rc;
}
