/* fuzz_image.c — PNG and JPEG decoding from memory under a small pixel cap (so that each input
 * stays fast): decodes within the cap, or fails naming the input; the header probe (what streamed
 * datasets check at load) fails naming the input or, when the image also decodes, agrees with
 * the decoded size and channel count. */
#include "fuzz_util.h"

#include "io/image.h"

#define FUZZ_MAX_PIXELS (1 << 20)

static volatile unsigned sink; /* keeps the pixel reads below from being optimized away */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int pw = 0, ph = 0, pc = 0;
    int probed = sp_image_probe_mem("fuzz.img", data, size, &pw, &ph, &pc) == 0;
    if (!probed && strncmp(sp_last_error(), "fuzz.img: ", 10)) {
        fprintf(stderr, "probe error does not name the input: %s\n", sp_last_error());
        abort();
    }
    sp_image im;
    if (sp_image_decode("fuzz.img", data, size, FUZZ_MAX_PIXELS, &im) == 0) {
        if (probed && (pw != im.width || ph != im.height || pc != im.channels)) {
            fprintf(stderr, "probe %dx%dx%d, decoded %dx%dx%d\n", pw, ph, pc, im.width, im.height, im.channels);
            abort();
        }
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
