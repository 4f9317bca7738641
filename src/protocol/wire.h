/*-------------------------------------------------------------------------
 *
 * wire.h
 *	  Protobuf wire-format primitives, the output buffer responses are
 *	  written into, and snappy block compression.
 *
 * Responses are written by hand, straight from the series set: a message
 * is a sequence of fields, each a tag (field number << 3 | wire type)
 * followed by a varint, 8 fixed bytes, or a varint length and that many
 * bytes.  The sizes of nested messages are computed before they are
 * written, so everything goes into one buffer in one pass.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_WIRE_H
#define PROMREAD_WIRE_H

#include "postgres.h"

#include <protobuf-c/protobuf-c.h>

#include "port/pg_bitutils.h"
#include "port/pg_bswap.h"

/* Wire types. */
#define WIRE_VARINT		0
#define WIRE_FIXED64	1
#define WIRE_LEN		2

/* The one-byte tag of a field (field numbers below 16). */
#define WIRE_TAG(field, type)	((uint8) (((field) << 3) | (type)))

/*
 * The data of a protobuf bytes field as decoded by protobuf-c, which leaves
 * an empty field's data NULL: never NULL here.
 */
static inline const char *
wire_bytes(ProtobufCBinaryData field)
{
	return field.len > 0 ? (const char *) field.data : "";
}

/* The bits of a double, as fixed64 fields and XOR chunks carry them. */
static inline uint64
wire_double_bits(double v)
{
	uint64		bits;

	memcpy(&bits, &v, sizeof(bits));
	return bits;
}

/*
 * Bytes of a varint: 7 bits each, so (bits + 6) / 7 for a value of bits
 * significant bits, which is (9 * (bits - 1) + 73) / 64 for bits up to 64:
 * a multiply by 9 and a shift instead of a division by 7, on the per-row
 * path and for every label.
 */
static inline int
wire_varint_size(uint64 value)
{
	/* lengths of labels are short: one byte, by a branch that stays put */
	if (value < 0x80)
		return 1;
	return (9 * pg_leftmost_one_pos64(value) + 73) >> 6;
}

/*
 * Bytes of a Sample's value field in a SAMPLES response: none when its bits
 * are all zero (+0.0).
 */
static inline int
wire_sample_value_size(double v)
{
	return wire_double_bits(v) != 0 ? 9 : 0;
}

/* Bytes of a Sample's time field: none for 0. */
static inline int
wire_sample_time_size(int64 t)
{
	return t != 0 ? 1 + wire_varint_size((uint64) t) : 0;
}

/* Bytes of a Sample message: its value's field and its time's (at most 20). */
static inline int
wire_sample_size(int64 t, double v)
{
	return wire_sample_value_size(v) + wire_sample_time_size(t);
}

/* Bytes of a Sample field's tag and length (its message is below 128). */
#define WIRE_SAMPLE_HEADER_SIZE		2

/* Bytes of a Sample as a field of a TimeSeries: tag, length, message. */
#define WIRE_SAMPLE_FIELD_SIZE(t, v) \
	(WIRE_SAMPLE_HEADER_SIZE + wire_sample_size((t), (v)))

/* The most bytes of one Sample field: tag, length, value, time. */
#define WIRE_SAMPLE_FIELD_MAX	(WIRE_SAMPLE_HEADER_SIZE + 9 + 11)

/* Write a varint; returns the position after it. */
static inline char *
wire_put_varint(char *p, uint64 value)
{
	while (value >= 0x80)
	{
		*p++ = (char) (value | 0x80);
		value >>= 7;
	}
	*p++ = (char) value;
	return p;
}

/* Write 8 bytes little-endian; returns the position after them. */
static inline char *
wire_put_fixed64(char *p, uint64 value)
{
#ifdef WORDS_BIGENDIAN
	value = pg_bswap64(value);
#endif
	memcpy(p, &value, 8);
	return p + 8;
}

/*
 * The 7-bit groups of a value below 2^28 spread into the low 7 bits of four
 * bytes, from the lowest: a varint's bytes without their continuation bits,
 * by two shift-and-mask steps whose masks fit in the instructions.  One
 * store writes them, where the loop of wire_put_varint takes a branch per
 * byte.
 */
static inline uint32
wire_spread28(uint32 x)
{
	Assert(x < ((uint32) 1 << 28));
	x = (x & 0x3FFF) | ((x & 0x0FFFC000) << 2);
	return (x & 0x007F007F) | ((x & 0x3F803F80) << 1);
}

/*
 * Copy len bytes to p and return the position after them.  Label names and
 * values are short: up to 32 bytes are moved by two loads and two stores
 * that may overlap, not by a call.
 */
static inline char *
wire_put_bytes(char *p, const char *bytes, Size len)
{
	/* copies of a constant size are moves, not calls */
	if (len > 32)
		memcpy(p, bytes, len);
	else if (len >= 16)
	{
		memcpy(p, bytes, 16);
		memcpy(p + len - 16, bytes + len - 16, 16);
	}
	else if (len >= 8)
	{
		memcpy(p, bytes, 8);
		memcpy(p + len - 8, bytes + len - 8, 8);
	}
	else if (len >= 4)
	{
		memcpy(p, bytes, 4);
		memcpy(p + len - 4, bytes + len - 4, 4);
	}
	else if (len > 0)
	{
		p[0] = bytes[0];
		p[len / 2] = bytes[len / 2];
		p[len - 1] = bytes[len - 1];
	}
	return p + len;
}

/* Bytes of the one-byte tag and the length of a length-delimited field. */
static inline Size
wire_len_header_size(Size len)
{
	return 1 + wire_varint_size(len);
}

/* Bytes of a length-delimited field of a one-byte tag holding len bytes. */
static inline Size
wire_len_field_size(Size len)
{
	return wire_len_header_size(len) + len;
}

/* Write the tag and length of a length-delimited field. */
static inline char *
wire_put_len_header(char *p, int field, Size len)
{
	*p++ = (char) WIRE_TAG(field, WIRE_LEN);
	return wire_put_varint(p, len);
}

/* Field numbers of a Label, and of the labels of a TimeSeries or ChunkedSeries. */
#define WIRE_LABELS_FIELD		1
#define WIRE_LABEL_NAME_FIELD	1
#define WIRE_LABEL_VALUE_FIELD	2

/*
 * Bytes of the start of the Label messages of one name, made once for a
 * label column: the name's field and the value field's tag.  A Label is
 * then this and the value's length and bytes.
 */
static inline Size
wire_name_part_size(Size name_len)
{
	return wire_len_field_size(name_len) + 1;
}

/* Write the start of the Label messages of a name; returns the end. */
static inline char *
wire_put_name_part(char *p, const char *name, Size name_len)
{
	p = wire_put_len_header(p, WIRE_LABEL_NAME_FIELD, name_len);
	p = wire_put_bytes(p, name, name_len);
	*p++ = (char) WIRE_TAG(WIRE_LABEL_VALUE_FIELD, WIRE_LEN);
	return p;
}

/* Bytes of a Label message of a name's start and a value. */
static inline Size
wire_label_size(Size name_part_len, Size value_len)
{
	return name_part_len + wire_varint_size(value_len) + value_len;
}

/* Bytes of a Label message as a length-delimited field of its parent. */
static inline Size
wire_label_field_size(Size name_part_len, Size value_len)
{
	return wire_len_field_size(wire_label_size(name_part_len, value_len));
}

/*
 * Write a Label, of a name's start (wire_put_name_part) and a value, as a
 * field numbered 1 (the labels of a TimeSeries or a ChunkedSeries); returns
 * the end.
 */
static inline char *
wire_put_label(char *p, const char *name_part, Size name_part_len,
			   const char *value, Size value_len)
{
	p = wire_put_len_header(p, WIRE_LABELS_FIELD,
							wire_label_size(name_part_len, value_len));
	p = wire_put_bytes(p, name_part, name_part_len);
	p = wire_put_varint(p, value_len);
	return wire_put_bytes(p, value, value_len);
}

/* A growing output buffer; may exceed 1 GB. */
typedef struct PromBuffer
{
	char	   *data;
	Size		len;
	Size		capacity;
} PromBuffer;

extern void PromBufferInit(PromBuffer *buf, Size capacity);
extern char *PromBufferReserve(PromBuffer *buf, Size len);

/*
 * The bytes of one part of a message (a QueryResult), made on demand: the
 * part is written item by item (a header, a series' labels, a run of
 * samples) and can stop between any two and go on.
 */
typedef struct PromProducer PromProducer;
struct PromProducer
{
	/*
	 * Write whole items into buf, at most room bytes, and return how many
	 * bytes; 0 only when the next item is larger than room, and then *need
	 * is its size.  It runs inside snappy, so it must not throw an error.
	 */
	Size		(*produce) (PromProducer *producer, char *buf, Size room,
							Size *need);
	uint64		remaining;		/* bytes still to be produced */
};

/* Bytes a producer is asked for at once, unless an item needs more. */
#define PROM_SNAPPY_PIECE	4096

/*
 * A snappy-compressed message written from producers (snappy_writer.c).
 * The output is exactly snappy_compress() of the whole message, which is
 * never held uncompressed: snappy pulls each 64 kB fragment from the
 * producers, piece by piece, and the output grows to what it compresses
 * to.  The output is a bytea whose snappy length prefix is written when the
 * writer is finished.
 */
typedef struct PromSnappyWriter
{
	MemoryContext context;		/* where the output and the pieces live */
	char	   *out;			/* varlena header, prefix room, elements */
	Size		out_len;
	Size		out_size;
	uint64		total;			/* uncompressed bytes taken into fragments */
	uint64		expected;		/* uncompressed bytes known of the message */
	char	   *piece;			/* bytes produced, not yet compressed */
	Size		piece_start;
	Size		piece_end;
	Size		piece_size;
	PromProducer *producer;		/* the part being written */
	bool		failed;			/* memory could not be had inside snappy */
	uint64		produce_ticks;	/* ticks spent producing, inside snappy */
} PromSnappyWriter;

extern void PromSnappyWriterInit(PromSnappyWriter *writer);
extern void PromSnappyWriterWrite(PromSnappyWriter *writer,
								  PromProducer *producer, bool last);
extern Size PromSnappyWriterBytes(const PromSnappyWriter *writer);
extern bytea *PromSnappyWriterFinish(PromSnappyWriter *writer);
extern void PromResponseTooLarge(void) pg_attribute_noreturn();

/*
 * A budget for decoding untrusted data within promread.max_memory
 * (wire.c): protobuf-c unpacks through its allocator into its context.
 */
typedef struct PromDecodeBudget
{
	ProtobufCAllocator allocator;	/* hand &budget->allocator to protobuf-c */
	MemoryContext context;		/* where decoded data is allocated */
	Size		limit;			/* bytes the context may hold */
	bool		refused;		/* an allocation passed the limit */
	Size		refused_size;	/* and its size */
	const char *what;			/* names the data in messages */
	int			sqlstate;		/* of the error past the limit: 53200 */
	Size		held;			/* bytes charged to promread.max_memory */
	bool		registered;		/* is release registered on context? */
	MemoryContextCallback release;
} PromDecodeBudget;

extern PromDecodeBudget *PromDecodeBudgetCreate(const char *what);
extern void PromDecodeBudgetCheck(PromDecodeBudget *budget, Size more);
extern void PromDecodeBudgetHold(PromDecodeBudget *budget);
extern void PromDecodeBudgetCharge(PromDecodeBudget *budget, Size more);

/* A snappy-compressed request, unpacked within a budget (wire.c). */
extern ProtobufCMessage *PromUnpackRequest(const char *body, Size len,
										   const ProtobufCMessageDescriptor *descriptor,
										   const char *what, int limit_sqlstate,
										   PromDecodeBudget *budget);

/* A snappy-compressed ReadRequest, unpacked within a budget (read_request.c). */
struct Prometheus__ReadRequest;
extern struct Prometheus__ReadRequest *PromUnpackReadRequest(const char *body,
															 Size len,
															 PromDecodeBudget *budget);

/* Snappy block format (wire.c). */
extern bytea *PromSnappyCompress(const char *data, Size len, const char *what);
extern char *PromSnappyDecompress(const char *data, Size len, Size limit,
								  const char *what, const char *limit_setting,
								  int limit_sqlstate, PromDecodeBudget *budget,
								  Size *result_len);

#endif							/* PROMREAD_WIRE_H */
