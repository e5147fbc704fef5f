/* codebook.h — the clustering that compressed model formats (.sog) need: a codebook of k scalar
 * values for a set of numbers (1-D k-means), and a palette of k vectors for a set of points
 * (k-means in d dimensions). Both are deterministic: a fixed seed, a fixed order of work, and
 * the same result for any number of OpenMP threads. Buffers come from the fallible allocator:
 * -1 means out of memory, with the error set (the caller names its file). */
#ifndef SPLAT_CODEBOOK_H
#define SPLAT_CODEBOOK_H

#include <stddef.h>
#include <stdint.h>

/* k values, ascending, for the n finite values v: exactly the distinct values when there are
 * at most k of them (the rest repeat the largest), else Lloyd's algorithm on the sorted values,
 * started halfway between evenly spaced values and quantiles so the tails keep entries. */
int sp_codebook_1d(const float *v, size_t n, int k, float *codebook);
/* Index of the entry nearest to x in an ascending codebook of k entries. */
int sp_codebook_nearest(const float *codebook, int k, float x);

/* Clusters the n points of d floats (row-major) into at most k centroids (k * d floats,
 * row-major) and gives each point the index of its centroid; *used is the number of centroids.
 * With k >= n every point is its own centroid. Above 64 centroids the clustering is
 * hierarchical (sqrt(k) coarse clusters, then each coarse cluster's points split into a share of
 * k proportional to their number, and so on), which keeps it to seconds for a few hundred
 * thousand points. `iterations` rounds of Lloyd's algorithm at each level. */
int sp_kmeans(const float *points, int n, int d, int k, int iterations, uint64_t seed, float *centroids,
              uint32_t *labels, int *used);

#endif
