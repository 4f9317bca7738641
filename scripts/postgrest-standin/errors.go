package main

import (
	"strconv"
	"strings"
)

// apiError is an answer other than success: the status, PostgREST's JSON
// body and extra headers.
type apiError struct {
	status  int
	code    string
	message string
	details *string
	hint    *string
	headers [][2]string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

// optional is nil for "", for the JSON body's null.
func optional(text string) *string {
	if text == "" {
		return nil
	}
	return &text
}

// pgErrorStatus is PostgREST's HTTP status for a PostgreSQL error (its
// pgErrorStatus).
func pgErrorStatus(sqlstate, message string, authenticated bool) int {
	c := sqlstate
	class := c
	if len(class) > 2 {
		class = class[:2]
	}
	switch {
	case class == "08":
		return 503 // connection exception
	case class == "09":
		return 500 // triggered action exception
	case class == "0L", class == "0P":
		return 403 // invalid grantor, invalid role specification
	case c == "23503", c == "23505":
		return 409 // foreign key, unique violation
	case c == "25006":
		return 405 // read only sql transaction
	case c == "21000":
		if strings.HasSuffix(message, "requires a WHERE clause") {
			return 400
		}
		return 500
	case c == "22023" && strings.HasPrefix(message, "role") &&
		strings.HasSuffix(message, "does not exist"):
		return 401 // the role of the token does not exist
	case class == "25", class == "2D", class == "38", class == "39", class == "3B", class == "40":
		return 500
	case class == "28":
		return 403 // invalid authorization specification
	case c == "53400":
		return 500 // configuration limit exceeded
	case class == "53":
		return 503 // insufficient resources
	case c == "57P01":
		return 503 // admin shutdown
	case class == "54", class == "55", class == "57", class == "58", class == "F0",
		class == "HV", class == "XX":
		return 500 // too complex, prerequisite state, operator, system, internal
	case c == "P0001":
		return 400 // RAISE's default
	case class == "P0":
		return 500 // PL/pgSQL
	case c == "42883":
		return 404 // undefined function
	case c == "42P01":
		return 404 // undefined table
	case c == "42P17":
		return 500 // infinite recursion
	case c == "42501":
		if authenticated {
			return 403
		}
		return 401 // insufficient privilege
	case class == "PT":
		if status, err := strconv.Atoi(c[2:]); err == nil && status >= 100 && status <= 599 {
			return status
		}
		return 500
	}
	return 400
}
