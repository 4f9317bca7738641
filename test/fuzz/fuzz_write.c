/*
 * fuzz_write.c
 *	  libFuzzer target: the body of a remote-write POST, a snappy-compressed
 *	  protobuf WriteRequest, through PromDecodeWriteRequest
 *	  (src/protocol/write_request.c): the snappy length check against
 *	  promread.max_request_bytes and decompression (src/protocol/wire.c), protobuf-c's
 *	  unpacking, and every check of series, labels and metadata.
 *
 * An ERROR is a clean rejection when its SQLSTATE is one write_request.c
 * documents: 22P03 (undecodable), 22021 (invalid UTF-8 or NUL), 22023
 * (other invalid values, a request over the size limit or decoding past
 * promread.max_memory, 256 kB in the shim), plus 54001 (stack depth).
 * Anything else, a sanitizer report, a broken invariant of the decoded
 * request (checked below), memory outliving the input, or memory more than
 * 256 kB past promread.max_memory (pg_shim.c) is a bug.
 * The custom mutator of snappy_mutator.c mutates the protobuf inside the
 * snappy block.
 *
 * Built twice: fuzz_write decodes remote write 1.0 (WriteRequest),
 * fuzz_write_v2 (-DFUZZ_WRITE_V2) remote write 2.0 (Request, through
 * PromDecodeWriteRequestV2: symbols, label references, per-series
 * metadata), whose decoded request promises the same.  Both decode native
 * histograms (histogram.c's PromHistogramAllocate and PromHistogramCheck)
 * and exemplars: every histogram kept is a well-formed value, every
 * exemplar's labels valid, distinct and within 128 characters.
 */
#include "postgres.h"

#include <stdint.h>

#include "pg_shim.h"
#include "promread.h"
#include "protocol/protocol.h"

static const char *const allowed[] = {"22P03", "22021", "22023", "54001", NULL};

/* Decode one input and check what a decoded request promises. */
static void
decode(const uint8_t *data, size_t size)
{
#ifdef FUZZ_WRITE_V2
	PromWriteRequest *request = PromDecodeWriteRequestV2((const char *) data, size);
#else
	PromWriteRequest *request = PromDecodeWriteRequest((const char *) data, size);
#endif

	for (int i = 0; i < request->nseries; i++)
	{
		const PromWriteSeries *series = &request->series[i];

		if (series->metric == NULL ||
			!PromIsValidMetricName(series->metric, strlen(series->metric)))
			shim_fail("series %d has no valid metric name", i);
		for (int j = 0; j < series->nlabels; j++)
		{
			const PromWriteLabel *label = &series->labels[j];

			if (label->value_len <= 0 ||
				!PromIsValidUtf8(label->value, label->value_len) ||
				memchr(label->value, '\0', label->value_len) != NULL)
				shim_fail("series %d label %d has an empty or invalid value", i, j);
			if (!PromIsValidLabelName(label->name, strlen(label->name)) ||
				strcmp(label->name, "__name__") == 0)
				shim_fail("series %d label %d has an invalid name", i, j);
			if (j > 0 && strcmp(series->labels[j - 1].name, label->name) >= 0)
				shim_fail("series %d labels not sorted and distinct", i);
		}
		for (int j = 0; j < series->nhistograms; j++)
		{
			const PromHistogram *h = series->histograms[j].value;

			if (h == NULL ||
				VARSIZE(h) != PromHistogramSize(h->npositive_spans, h->nnegative_spans,
												h->npositive_buckets, h->nnegative_buckets,
												h->ncustom_values) ||
				h->kind > PROM_HISTOGRAM_FLOAT || h->reset_hint > PROM_RESET_GAUGE ||
				(h->schema != PROM_SCHEMA_CUSTOM &&
				 (h->schema < PROM_SCHEMA_MIN || h->schema > PROM_SCHEMA_MAX)))
				shim_fail("series %d histogram %d is not a valid value", i, j);
		}
		for (int j = 0; j < series->nexemplars; j++)
		{
			const PromWriteExemplar *e = &series->exemplars[j];
			int			chars = 0;

			for (int k = 0; k < e->nlabels; k++)
			{
				const PromWriteLabel *label = &e->labels[k];

				if (!PromIsValidLabelName(label->name, strlen(label->name)) ||
					!PromIsValidUtf8(label->value, label->value_len) ||
					memchr(label->value, '\0', label->value_len) != NULL)
					shim_fail("series %d exemplar %d label %d is invalid", i, j, k);
				for (int c = 0; label->name[c]; c++)
					chars += ((unsigned char) label->name[c] & 0xC0) != 0x80;
				for (int c = 0; c < label->value_len; c++)
					chars += ((unsigned char) label->value[c] & 0xC0) != 0x80;
				for (int m = 0; m < k; m++)
					if (strcmp(e->labels[m].name, label->name) == 0)
						shim_fail("series %d exemplar %d names a label twice", i, j);
			}
			if (chars > 128)
				shim_fail("series %d exemplar %d has labels past 128 characters", i, j);
		}
	}
	for (int i = 0; i < request->nmetadata; i++)
	{
		const PromWriteMetadata *m = &request->metadata[i];

		if (!PromIsValidMetricName(m->family, strlen(m->family)) ||
			!PromIsValidUtf8(m->help, strlen(m->help)) ||
			!PromIsValidUtf8(m->unit, strlen(m->unit)))
			shim_fail("metadata %d has an invalid family or text", i);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	shim_begin_input();
	SHIM_RUN(decode(data, size));
	shim_end_input(allowed);
	return 0;
}
