/* fuzz_image.c — PNG and JPEG decoding from memory under a small pixel cap (so that each input
 * stays fast): decodes within the cap, or fails naming the input. */
#include "fuzz_util.h"

#include "io/image.h"

#define FUZZ_MAX_PIXELS (1 << 20)

static volatile unsigned sink; /* keeps the pixel reads below from being optimized away */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sp_image im;
    if (sp_image_decode("fuzz.img", data, size, FUZZ_MAX_PIXELS, &im) == 0) {
        if (!im.pixels || im.width < 1 || im.height < 1 || (long long)im.width * im.height > FUZZ_MAX_PIXELS ||
            (im.channels != 3 && im.channels != 4))
            abort();
        unsigned sum = 0; /* touch every byte: reads past the buffer are caught */
        for (size_t i = 0; i < (size_t)im.width * im.height * im.channels; i++) sum += im.pixels[i];
        sink += sum;
        sp_image_free(&im);
    } else if (strncmp(sp_last_error(), "fuzz.img: ", 10)) {
        fprintf(stderr, "error does not name the input: %s\n", sp_last_error());
        abort();
    }
    return 0;
}
