/* backend_ops_sort.h — the parity harness's checks of a backend's pair sort on its own (the stage
 * table's optional `sort`; test_backend_ops.c includes this file): keys shaped to reach every path
 * of a radix sort, each list compared with a stable sort on the host, exactly. bin sorts only the
 * keys a scene makes (a few thousand, one or two tile bytes); here: no key, one, counts around a
 * workgroup's chunk, all keys equal, a few distinct keys among many (stability), digits that are
 * the same for every key in some byte positions but not others (passes skipped, in odd and even
 * numbers), keys of all 64 bits, and enough keys for many hundreds of workgroups. The values are
 * a random permutation, so the values that come back name the order of every pair. */

typedef struct {
    uint32_t hi, lo, idx;
} sort_item;

static int sort_item_cmp(const void *a, const void *b) {
    const sort_item *x = a, *y = b;
    if (x->hi != y->hi) return x->hi < y->hi ? -1 : 1;
    if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* How a case's keys are made: fixed bytes (mask bits 0 take their value from fix), a few distinct
 * keys, a run in descending order, or (tile, depth) keys as emit_pairs writes them. */
enum { SORT_RANDOM, SORT_FEW, SORT_DESCENDING, SORT_TILE_DEPTH };
typedef struct {
    const char *name;
    int64_t n;
    int hi_bits, kind;
    uint32_t mask_hi, mask_lo; /* bits that vary (SORT_RANDOM) */
} sort_case;

static void sort_make_keys(const sort_case *sc, sp_rng *r, uint32_t *hi, uint32_t *lo) {
    uint32_t hmask = sc->hi_bits >= 32 ? 0xffffffffu : (1u << sc->hi_bits) - 1u;
    uint32_t fix_hi = sp_rng_u32(r) & hmask, fix_lo = sp_rng_u32(r);
    uint32_t few_hi[7], few_lo[7];
    for (int k = 0; k < 7; k++) few_hi[k] = sp_rng_u32(r) & hmask, few_lo[k] = sp_rng_u32(r);
    for (int64_t i = 0; i < sc->n; i++) {
        switch (sc->kind) {
        case SORT_FEW: {
            int k = (int)(sp_rng_u32(r) % 7u);
            hi[i] = few_hi[k], lo[i] = few_lo[k];
            break;
        }
        case SORT_DESCENDING: { /* pairs of equal keys, descending */
            uint32_t k = (uint32_t)((sc->n - i) / 2);
            hi[i] = (k >> 8) & hmask, lo[i] = k << 24 | (k & 0xffffffu);
            break;
        }
        case SORT_TILE_DEPTH: { /* depth in [2, 8): the depth word's top byte the same for every key */
            float depth = 2.0f + 6.0f * (float)(sp_rng_u32(r) >> 8) / 16777216.0f;
            memcpy(&lo[i], &depth, 4);
            hi[i] = sp_rng_u32(r) % 2500u;
            break;
        }
        default:
            hi[i] = ((sp_rng_u32(r) & sc->mask_hi) | (fix_hi & ~sc->mask_hi)) & hmask;
            lo[i] = (sp_rng_u32(r) & sc->mask_lo) | (fix_lo & ~sc->mask_lo);
        }
    }
}

static int step_sort(const tcase *c, sp_backend *b) {
    const char *stage = "sort";
    const sp_stage_ops *st = b->ops->stages;
    if (!st || !st->sort) {
        printf("%s: no sort of its own in the stage table (bin checks it with the lists): skipped\n", c->label);
        return 1;
    }
    static const sort_case cases[] = {
        {"no keys", 0, 32, SORT_RANDOM, ~0u, ~0u},
        {"one key", 1, 32, SORT_RANDOM, ~0u, ~0u},
        {"2047 keys of 64 bits", 2047, 32, SORT_RANDOM, ~0u, ~0u},
        {"2048 keys, 12 tile bits", 2048, 12, SORT_RANDOM, ~0u, ~0u},
        {"6145 keys, 12 tile bits", 6145, 12, SORT_RANDOM, ~0u, ~0u},
        {"all 20000 keys equal", 20000, 32, SORT_RANDOM, 0u, 0u},
        {"7 distinct keys among 100000", 100000, 32, SORT_FEW, 0u, 0u},
        {"descending pairs, 30001 keys", 30001, 24, SORT_DESCENDING, 0u, 0u},
        /* bytes the same for every key: low 0 and 2, high 1 (3 passes of 6 run), then only low byte
         * 1 and high byte 0 vary (2 of 6), then only the lowest byte (1 of 5) */
        {"3 of 6 bytes vary, 50000 keys", 50000, 16, SORT_RANDOM, 0x00ffu, 0xff00ff00u},
        {"2 of 6 bytes vary, 50000 keys", 50000, 16, SORT_RANDOM, 0x00ffu, 0x0000ff00u},
        {"1 of 5 bytes varies, 9000 keys", 9000, 8, SORT_RANDOM, 0u, 0x000000ffu},
        {"1000000 keys of 64 bits", 1000000, 32, SORT_RANDOM, ~0u, ~0u},
        {"3000000 (tile, depth) keys", 3000000, 12, SORT_TILE_DEPTH, 0u, 0u},
    };
    int ok = 1;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const sort_case *sc = &cases[ci];
        sp_rng r = pt_rng(1200 + ci);
        size_t m = (size_t)(sc->n > 0 ? sc->n : 1);
        uint32_t *hi = sp_malloc(m * 4), *lo = sp_malloc(m * 4), *val = sp_malloc(m * 4), *in_val = sp_malloc(m * 4);
        sort_item *ref = sp_malloc(m * sizeof *ref);
        sort_make_keys(sc, &r, hi, lo);
        for (int64_t i = 0; i < sc->n; i++) in_val[i] = (uint32_t)i;
        for (int64_t i = sc->n - 1; i > 0; i--) { /* values: a random permutation */
            int64_t j = (int64_t)(sp_rng_u32(&r) % (uint32_t)(i + 1));
            uint32_t x = in_val[i];
            in_val[i] = in_val[j], in_val[j] = x;
        }
        for (int64_t i = 0; i < sc->n; i++) ref[i] = (sort_item){hi[i], lo[i], (uint32_t)i};
        qsort(ref, (size_t)sc->n, sizeof *ref, sort_item_cmp);
        memcpy(val, in_val, m * 4);
        char what[96];
        snprintf(what, sizeof what, "(%s, %d high bits)", sc->name, sc->hi_bits);
        if (st->sort(b, sc->n, sc->hi_bits, hi, lo, val)) {
            ok &= pt_report(0, c->label, stage, what, sp_last_error(), 1, 0);
        } else {
            int64_t bad = 0;
            for (int64_t j = 0; j < sc->n; j++) bad += hi[j] != ref[j].hi || val[j] != in_val[ref[j].idx];
            ok &= pt_report(bad == 0, c->label, stage, what, "pairs out of the stable order", (double)bad, 0);
        }
        free(hi), free(lo), free(val), free(in_val), free(ref);
    }
    return ok;
}
