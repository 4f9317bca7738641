/*-------------------------------------------------------------------------
 *
 * engine.h
 *	  The engine's public interface: series sets, which turn rows into
 *	  series, the arenas that hold them and the labels of enum types.
 *
 * A scan (scan/) or an aggregate makes a set, adds a layout per source of
 * rows and its rows, and finishes it; the encoders (protocol/) and
 * prom_series read the finished set's series, their labels and, through
 * samples.h's runs, their samples.  series_set.h holds the set's insides,
 * shared by the engine's files alone.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_ENGINE_H
#define PROMREAD_ENGINE_H

#include "promread.h"

#include "access/htup_details.h"

/*---- Arenas ----*/

typedef struct PromArena PromArena;

/* in arena.c */
extern PromArena *PromArenaCreate(MemoryContext context);
extern void PromArenaExpect(PromArena *arena, Size bytes);
extern void PromArenaUseHugePages(PromArena *arena);
extern void *PromArenaAlloc(PromArena *arena, Size size);
extern bool PromArenaIsNewest(const PromArena *arena, const void *end);
extern bool PromArenaExtend(PromArena *arena, Size size);
extern bool PromArenaRewind(PromArena *arena, void *start);
extern void PromArenaFree(PromArena *arena, void *pointer, Size size);
extern bool PromArenaIsLarge(Size size);
extern Size PromArenaBytes(const PromArena *arena);
extern Size PromMemoryAvailable(void);
extern void PromMemoryCharge(Size bytes);
extern void PromMemoryUncharge(Size bytes);

/*---- Enum labels ----*/

/* The labels of one enum type. */
typedef struct PromEnumLabels
{
	Oid			type;
	int			nlabels;
	Oid		   *values;
	const char **labels;
	int		   *lens;
} PromEnumLabels;

/* in enum_cache.c */
extern const PromEnumLabels *PromEnumLabelsOf(Oid type);
extern const char *PromEnumLabel(Oid value, int *len);

/*---- Series sets ----*/

/* A sample: its time in ms since the Unix epoch, its value. */
typedef struct PromSample
{
	int64		t;
	double		v;
} PromSample;

/* How the engine reads, compares and prints one label column. */
typedef enum PromLabelKind
{
	PROM_LABEL_TEXT,			/* text, varchar and their domains: bytes */
	PROM_LABEL_NAME,			/* name: NUL-padded bytes */
	PROM_LABEL_ENUM,			/* enum: compared by OID, printed once */
	PROM_LABEL_SCALAR,			/* other pass-by-value type: the Datum */
	PROM_LABEL_BINARY,			/* other by-reference type: its bytes */
	PROM_LABEL_CONST			/* a label with the same value on every row */
} PromLabelKind;

typedef struct PromSeriesSet PromSeriesSet;
typedef struct PromLayout PromLayout;
typedef struct PromSeries PromSeries;

/* The most labels a series has: a relation's columns and __name__. */
#define PROM_MAX_LABELS		(MaxTupleAttributeNumber + 1)

/* The most layouts a set has: a series names its layout in 16 bits. */
#define PROM_MAX_LAYOUTS	PG_UINT16_MAX

/* A label of a series as Prometheus sees it: name and value. */
typedef struct PromLabelRef
{
	const char *name;
	const char *value;
	int			name_len;
	int			value_len;
} PromLabelRef;

/* in series_set.c */
extern PromSeriesSet *PromSeriesSetCreate(MemoryContext context);
extern PromLayout *PromSeriesSetAddLayout(PromSeriesSet *set, int ncolumns,
										  const char *const *names,
										  const PromLabelKind *kinds,
										  const Oid *types,
										  const char *const *const_values);
extern void PromSeriesSetFinish(PromSeriesSet *set);
extern void PromSeriesSetFree(PromSeriesSet *set);
extern Size PromSeriesSetArenaBytes(const PromSeriesSet *set);
extern PromSeries *const *PromSeriesSetSeriesSoFar(PromSeriesSet *set,
													int *count);
extern PromSeries *const *PromSeriesSetSeries(const PromSeriesSet *set,
											  int *count);
extern int64 PromSeriesSetSampleCount(const PromSeriesSet *set);
extern Size PromSeriesSetResultBytes(PromSeriesSet *set);

/* in layout.c */
extern PromLabelKind PromLabelKindOf(Oid type);
extern void PromLayoutExpectRows(PromSeriesSet *set, PromLayout *layout,
								 double rows);
extern void PromLayoutAddFilter(PromSeriesSet *set, PromLayout *layout,
								int column, const PromMatcher *matcher);
extern void PromLayoutSetOverflow(PromSeriesSet *set, PromLayout *layout,
								  int column);
extern void PromLayoutSetHistograms(PromSeriesSet *set, PromLayout *layout);
extern int	PromSeriesLabelCount(const PromSeriesSet *set,
								 const PromSeries *series);
extern int	PromSeriesLabels(const PromSeriesSet *set, const PromSeries *series,
							 PromLabelRef *labels);
extern Size PromSeriesLabelsSize(const PromSeriesSet *set,
								 const PromSeries *series);
extern char *PromPutSeriesLabels(char *p, const PromSeriesSet *set,
								 const PromSeries *series);
extern char *PromSeriesLabelsText(const PromSeriesSet *set,
								  const PromSeries *series);

/*
 * A chunk as stored (docs/chunk-storage.md), kept whole for a
 * STREAMED_XOR_CHUNKS answer: its encoding (1 XOR, 2 histogram, 3 float
 * histogram), the times of its first and last samples, its sample count
 * (its first two bytes) and its bytes.
 */
typedef struct PromStoredChunk
{
	int64		min_t;
	int64		max_t;
	const char *data;
	uint32		len;
	uint16		nsamples;
	uint8		encoding;
} PromStoredChunk;

/* in series_set.c */
extern void PromSeriesSetKeepChunks(PromSeriesSet *set);
extern bool PromSeriesSetKeepsChunks(const PromSeriesSet *set);
extern const PromStoredChunk *PromSeriesSetStoredChunks(const PromSeriesSet *set,
														int i, int *count);

/* in group.c */
extern void PromSeriesSetAddChunk(PromSeriesSet *set, PromLayout *layout,
								  const Datum *values, const bool *isnull,
								  const PromStoredChunk *chunk);
extern void PromSeriesSetAdd(PromSeriesSet *set, PromLayout *layout,
							 const Datum *values, const bool *isnull,
							 int64 t, double v);
extern void PromSeriesSetAddRun(PromSeriesSet *set, PromLayout *layout,
								const Datum *values, const bool *isnull,
								const PromSample *samples, int64 nsamples);

/*
 * Histogram samples.  A layout whose value column is a prom_histogram gives
 * its series histogram samples: the 8 bytes of such a sample's value hold a
 * pointer to the histogram (histogram/histogram.h), copied into the set's
 * memory, not a double.  Readers ask PromSeriesHoldsHistograms first.
 */
struct PromHistogram;

static inline const struct PromHistogram *
PromSampleHistogram(const PromSample *sample)
{
	const struct PromHistogram *h;

	StaticAssertStmt(sizeof(h) <= sizeof(sample->v),
					 "a pointer does not fit a sample's value");
	memcpy(&h, &sample->v, sizeof(h));
	return h;
}

/* in series_set.c */
extern bool PromSeriesHoldsHistograms(const PromSeriesSet *set,
									  const PromSeries *series);
extern double PromSeriesSetCopyHistogram(PromSeriesSet *set, Datum value);

/* A histogram as a sample's value: the pointer's bytes (see above). */
static inline double
PromHistogramSampleValue(const struct PromHistogram *h)
{
	double		v = 0;

	memcpy(&v, &h, sizeof(h));
	return v;
}

/* in samples.c */
extern int64 PromSeriesSampleCount(const PromSeries *series);
extern void PromSeriesCopySamples(const PromSeries *series, void *dest);

/* A finished set's samples, read in runs (inline, for the encoders). */
#include "samples.h"

#endif							/* PROMREAD_ENGINE_H */
