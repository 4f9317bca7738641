/*-------------------------------------------------------------------------
 *
 * response.c
 *	  Writing SAMPLES responses (ReadResponse) straight from series sets.
 *
 * ReadResponse { repeated QueryResult results = 1 }, QueryResult {
 * repeated TimeSeries timeseries = 1 }, TimeSeries { repeated Label labels
 * = 1; repeated Sample samples = 2 }, Label { name = 1; value = 2 },
 * Sample { double value = 1; int64 timestamp = 2 }.
 *
 * The encoded size of each series and of the whole result are known
 * before anything is written (the series set adds up each series' bytes as
 * its samples arrive, and their total while it is finished), so each series
 * is read once, when it is written: no message objects, no allocation per
 * sample.
 * As protobuf encoders do, a sample's fields are left out when zero; a
 * value is left out only when its bits are all zero (+0.0), so that -0.0,
 * infinities and every NaN payload (the stale marker among them) keep their
 * exact bits.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "promread.h"
#include "wire.h"

/* Field numbers. */
#define RESULTS_FIELD		1	/* ReadResponse.results */
#define TIMESERIES_FIELD	1	/* QueryResult.timeseries */
#define LABELS_FIELD		1	/* TimeSeries.labels, ChunkedSeries.labels */
#define SAMPLES_FIELD		2	/* TimeSeries.samples */
#define LABEL_NAME_FIELD	1
#define LABEL_VALUE_FIELD	2
#define SAMPLE_VALUE_FIELD	1
#define SAMPLE_TIME_FIELD	2

/* Bytes of labels as repeated Label fields numbered 1. */
static Size
labels_size(const PromLabelRef *labels, int n)
{
	Size		size = 0;
	int			i;

	for (i = 0; i < n; i++)
		size += wire_len_field_size(wire_label_size(labels[i].name_len,
													labels[i].value_len));
	return size;
}

/* Write labels as repeated Label fields numbered 1; returns the end. */
static char *
put_labels(char *p, const PromLabelRef *labels, int n)
{
	int			i;

	for (i = 0; i < n; i++)
	{
		p = wire_put_len_header(p, LABELS_FIELD,
								wire_label_size(labels[i].name_len,
												labels[i].value_len));
		p = wire_put_len_header(p, LABEL_NAME_FIELD, labels[i].name_len);
		p = wire_put_bytes(p, labels[i].name, labels[i].name_len);
		p = wire_put_len_header(p, LABEL_VALUE_FIELD, labels[i].value_len);
		p = wire_put_bytes(p, labels[i].value, labels[i].value_len);
	}
	return p;
}

/* Write a series' labels as repeated Label fields numbered 1. */
char *
PromPutSeriesLabels(char *p, const PromSeries *series)
{
	PromLabelRef labels[PROM_MAX_LABELS];

	return put_labels(p, labels, PromSeriesLabels(series, labels));
}

/* The most bytes of one Sample field: tag, length, value, time. */
#define SAMPLE_FIELD_MAX	(2 + 9 + 11)

/* Samples written at once: as many as fit in a piece of the writer. */
#define SAMPLES_PER_PIECE	(PROM_SNAPPY_PIECE / SAMPLE_FIELD_MAX)

/*
 * Write n samples of a block from the given one as repeated Sample fields;
 * returns the end.
 */
static char *
put_samples(char *p, const PromSampleBlock *block, uint32 from, uint32 n)
{
	uint32		i;

	for (i = from; i < from + n; i++)
	{
		const PromSample *sample = &block->samples[i];
		uint64		bits = wire_double_bits(sample->v);

		PromPrefetchSamples(block->samples, i, block->count);
		*p++ = (char) WIRE_TAG(SAMPLES_FIELD, WIRE_LEN);
		*p++ = (char) wire_sample_size(sample->t, sample->v);
		if (bits != 0)
		{
			*p++ = (char) WIRE_TAG(SAMPLE_VALUE_FIELD, WIRE_FIXED64);
			p = wire_put_fixed64(p, bits);
		}
		if (sample->t != 0)
		{
			*p++ = (char) WIRE_TAG(SAMPLE_TIME_FIELD, WIRE_VARINT);
			p = wire_put_varint(p, (uint64) sample->t);
		}
	}
	return p;
}

/* Write a length-delimited field's header through the writer. */
static void
write_len_header(PromSnappyWriter *writer, int field, Size len)
{
	char	   *p = PromSnappyWriterRoom(writer, 1 + 10);

	PromSnappyWriterAdvance(writer, wire_put_len_header(p, field, len) - p);
}

/*
 * Write one QueryResult, as field 1 of a ReadResponse, holding the series
 * of a finished set in their order.  The set knows the bytes of each series
 * and of them all, so each series is read once, here.
 */
void
PromWriteSamplesResult(PromSnappyWriter *writer, const PromSeriesSet *set)
{
	int			nseries;
	PromSeries *const *series = PromSeriesSetSeries(set, &nseries);
	Size		result_size = PromSeriesSetResultBytes(set);
	int			i;

	PromSnappyWriterExpect(writer, wire_len_field_size(result_size));
	write_len_header(writer, RESULTS_FIELD, result_size);
	for (i = 0; i < nseries; i++)
	{
		PromLabelRef labels[PROM_MAX_LABELS];
		int			nlabels;
		const PromSampleBlock *block;
		char	   *p;

		CHECK_FOR_INTERRUPTS();
		PromPrefetchSeries(series, i, nseries);
		nlabels = PromSeriesLabels(series[i], labels);
		write_len_header(writer, TIMESERIES_FIELD, series[i]->message_bytes);
		p = PromSnappyWriterRoom(writer, labels_size(labels, nlabels));
		PromSnappyWriterAdvance(writer, put_labels(p, labels, nlabels) - p);
		for (block = series[i]->head; block != NULL; block = block->next)
		{
			uint32		done;

			PromPrefetchNextBlock(block);
			for (done = 0; done < block->count; done += SAMPLES_PER_PIECE)
			{
				uint32		n = Min(block->count - done, SAMPLES_PER_PIECE);

				p = PromSnappyWriterRoom(writer, (Size) n * SAMPLE_FIELD_MAX);
				PromSnappyWriterAdvance(writer,
										put_samples(p, block, done, n) - p);
			}
		}
	}
}
