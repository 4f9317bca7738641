package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// jwtClockSkew is the leeway on exp, nbf and iat, as PostgREST's.
const jwtClockSkew = 30 * time.Second

// jwtError is a 401 with PostgREST's WWW-Authenticate header.
func jwtError(code, message string) *apiError {
	description, _ := json.Marshal(message)
	return &apiError{status: 401, code: code, message: message, headers: [][2]string{
		{"WWW-Authenticate", `Bearer error="invalid_token", error_description=` + string(description)}}}
}

// base64URLDecode decodes base64url with or without its padding.
func base64URLDecode(text string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(text, "="))
}

// decodeObject decodes a JSON object, numbers kept as written.
func decodeObject(data []byte) (map[string]any, error) {
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.UseNumber()
	var object map[string]any
	if err := decoder.Decode(&object); err != nil {
		return nil, err
	}
	if object == nil {
		return nil, fmt.Errorf("not an object")
	}
	return object, nil
}

// verifyJWT returns the claims of an HS256 token signed with secret.
func verifyJWT(token string, secret []byte) (map[string]any, *apiError) {
	if token == "" {
		return nil, jwtError("PGRST301", "Empty JWT is sent in Authorization header")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, jwtError("PGRST301", fmt.Sprintf("Expected 3 parts in JWT; got %d", len(parts)))
	}
	if secret == nil {
		return nil, &apiError{status: 500, code: "PGRST300", message: "Server lacks JWT secret"}
	}
	headerJSON, err1 := base64URLDecode(parts[0])
	signature, err2 := base64URLDecode(parts[2])
	var header map[string]any
	if err1 != nil || err2 != nil || json.Unmarshal(headerJSON, &header) != nil {
		return nil, jwtError("PGRST301", "JWT couldn't be decoded")
	}
	if header["alg"] != "HS256" {
		return nil, jwtError("PGRST301", "Wrong or unsupported encoding algorithm")
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(parts[0] + "." + parts[1]))
	if !hmac.Equal(mac.Sum(nil), signature) {
		return nil, jwtError("PGRST301", "JWT cryptographic operation failed")
	}
	payload, err := base64URLDecode(parts[1])
	var claims map[string]any
	if err == nil {
		claims, err = decodeObject(payload)
	}
	if err != nil {
		return nil, jwtError("PGRST303", "Parsing claims failed")
	}
	now := time.Now()
	for _, check := range []struct {
		name, message string
		late          bool
	}{{"exp", "JWT expired", true}, {"nbf", "JWT not yet valid", false},
		{"iat", "JWT issued at future", false}} {
		value, present := claims[check.name]
		if !present {
			continue
		}
		number, isNumber := value.(json.Number)
		seconds, err := number.Float64()
		if !isNumber || err != nil {
			return nil, jwtError("PGRST303",
				fmt.Sprintf("The JWT '%s' claim must be a number", check.name))
		}
		at := time.Unix(0, 0).Add(time.Duration(seconds * float64(time.Second)))
		if check.late && now.Add(-jwtClockSkew).After(at) ||
			!check.late && now.Add(jwtClockSkew).Before(at) {
			return nil, jwtError("PGRST303", check.message)
		}
	}
	return claims, nil
}
