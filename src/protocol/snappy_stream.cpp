/*-------------------------------------------------------------------------
 *
 * snappy_stream.cpp
 *	  snappy::Compress over a Source and a Sink made of C callbacks.
 *
 * snappy's C interface compresses a buffer into a buffer: the whole
 * fragment must be staged first, and the output must have room for the
 * worst case.  Its C++ interface pulls the input from a Source, gathering
 * it into working memory of its own, and hands the output to a Sink, into
 * the Sink's room when there is enough or else into scratch memory of its
 * own.  snappy allocates that working memory on every call, whichever
 * interface is used; through this one promread needs no stage and no room
 * of its own for it (snappy_writer.c).
 *
 * Nothing may be thrown across the C frames that call this, nor a
 * PostgreSQL error across snappy's: the callbacks do not throw, and a
 * failure of snappy's allocation is caught here and returned.
 *
 *-------------------------------------------------------------------------
 */
#include "snappy_stream.h"

#include <snappy.h>
#include <snappy-sinksource.h>

namespace
{

/* A fragment's input, pulled through the callbacks. */
class PulledSource : public snappy::Source
{
public:
	PulledSource(const PromSnappyStream *stream, size_t len)
		: stream_(stream), left_(len)
	{
	}

	size_t		Available() const override
	{
		return left_;
	}

	const char *Peek(size_t *len) override
	{
		return stream_->peek(stream_->arg, len);
	}

	void		Skip(size_t n) override
	{
		stream_->skip(stream_->arg, n);
		left_ -= n;
	}

private:
	const PromSnappyStream *stream_;
	size_t		left_;
};

/*
 * A fragment's output, pushed through the callbacks; the length prefix
 * snappy writes first is dropped, since the fragment is part of a larger
 * message whose prefix is written when it is finished.
 */
class PushedSink : public snappy::Sink
{
public:
	explicit PushedSink(const PromSnappyStream *stream)
		: stream_(stream), prefix_seen_(false)
	{
	}

	void		Append(const char *bytes, size_t n) override
	{
		if (!prefix_seen_)
			prefix_seen_ = true;
		else
			stream_->append(stream_->arg, bytes, n);
	}

	char	   *GetAppendBuffer(size_t length, char *scratch) override
	{
		return stream_->room(stream_->arg, length, scratch);
	}

private:
	const PromSnappyStream *stream_;
	bool		prefix_seen_;
};

}								/* namespace */

bool
PromSnappyCompressFragment(const PromSnappyStream *stream, size_t len)
{
	try
	{
		PulledSource source(stream, len);
		PushedSink	sink(stream);

		snappy::Compress(&source, &sink);
		return true;
	}
	catch (...)
	{
		/* snappy throws only when its working memory cannot be had */
		return false;
	}
}
