/*-------------------------------------------------------------------------
 *
 * snappy_stream.h
 *	  One snappy fragment compressed from bytes pulled on demand into bytes
 *	  pushed out: snappy's C++ Source and Sink, for C (snappy_stream.cpp).
 *
 * No PostgreSQL header is included, so that the C++ side needs none.
 * Callbacks run inside snappy's C++ frames: they must not throw a
 * PostgreSQL error (nor anything else); they note a failure and carry on,
 * and the caller raises it once the call has returned.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_SNAPPY_STREAM_H
#define PROMREAD_SNAPPY_STREAM_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C"
{
#endif

typedef struct PromSnappyStream
{
	/*
	 * The next bytes of the input, at least one while input remains; they
	 * stay valid until skip.
	 */
	const char *(*peek) (void *arg, size_t *len);
	/* Consume n bytes of what peek gave. */
	void		(*skip) (void *arg, size_t n);
	/* Where to put up to len compressed bytes: room of the caller's, or scratch. */
	char	   *(*room) (void *arg, size_t len, char *scratch);
	/* Take n compressed bytes, written where room said. */
	void		(*append) (void *arg, const char *bytes, size_t n);
	void	   *arg;
} PromSnappyStream;

/*
 * Compress len bytes (at most one 64 kB fragment) pulled from the stream as
 * one snappy fragment, pushing out its elements without snappy's length
 * prefix; false if snappy could not allocate its working memory.
 */
extern bool PromSnappyCompressFragment(const PromSnappyStream *stream,
									   size_t len);

#ifdef __cplusplus
}
#endif

#endif							/* PROMREAD_SNAPPY_STREAM_H */
