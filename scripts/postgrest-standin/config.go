package main

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// config holds the PostgREST settings the stand-in reads.
type config struct {
	dbURI              string
	schemas            []string // db-schemas: the first is the default
	anonRole           string   // db-anon-role; "" refuses requests without a token
	extraSearchPath    []string
	pool               int
	acquisitionTimeout time.Duration
	jwtSecret          []byte // nil: none configured
	host               string
	port               int
}

// defaults are PostgREST's, for the settings read.
var defaults = map[string]string{
	"db-uri":                      "postgresql://",
	"db-schemas":                  "public",
	"db-extra-search-path":        "public",
	"db-pool":                     "10",
	"db-pool-acquisition-timeout": "10",
	"jwt-secret-is-base64":        "false",
	"server-host":                 "!4",
	"server-port":                 "3000",
}

// parseValue reads a value as PostgREST's configuration does: a quoted
// string (backslash escapes the next character), or a bare word up to a
// comment.
func parseValue(text string) (string, error) {
	text = strings.TrimSpace(text)
	if !strings.HasPrefix(text, `"`) {
		text, _, _ = strings.Cut(text, "#")
		return strings.TrimSpace(text), nil
	}
	var out strings.Builder
	for i := 1; i < len(text); i++ {
		c := text[i]
		if c == '\\' && i+1 < len(text) {
			i++
			out.WriteByte(text[i])
			continue
		}
		if c == '"' {
			return out.String(), nil
		}
		out.WriteByte(c)
	}
	return "", errors.New("unterminated string")
}

// readSettings reads key = value lines (# comments) over the defaults,
// then the PGRST_<NAME> environment variables over those.
func readSettings(path string) (map[string]string, error) {
	settings := make(map[string]string, len(defaults))
	for k, v := range defaults {
		settings[k] = v
	}
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		scanner := bufio.NewScanner(f)
		for number := 1; scanner.Scan(); number++ {
			line := strings.TrimSpace(scanner.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			key, value, found := strings.Cut(line, "=")
			if !found {
				return nil, fmt.Errorf("%s:%d: expected key = value", path, number)
			}
			parsed, err := parseValue(value)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %v", path, number, err)
			}
			settings[strings.TrimSpace(key)] = parsed
		}
		if err := scanner.Err(); err != nil {
			return nil, err
		}
	}
	for _, key := range []string{"db-uri", "db-schemas", "db-anon-role", "db-extra-search-path",
		"db-pool", "db-pool-acquisition-timeout", "jwt-secret", "jwt-secret-is-base64",
		"server-host", "server-port"} {
		env, set := os.LookupEnv("PGRST_" + strings.ToUpper(strings.ReplaceAll(key, "-", "_")))
		if !set {
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(env), `"`) {
			parsed, err := parseValue(env)
			if err != nil {
				return nil, fmt.Errorf("PGRST_%s: %v", key, err)
			}
			env = parsed
		}
		settings[key] = env
	}
	return settings, nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(value string) []string {
	var out []string
	for _, item := range strings.Split(value, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// readConfig reads the settings into a config, checking each.
func readConfig(path string) (*config, error) {
	s, err := readSettings(path)
	if err != nil {
		return nil, err
	}
	cfg := &config{
		dbURI:           s["db-uri"],
		schemas:         splitList(s["db-schemas"]),
		anonRole:        s["db-anon-role"],
		extraSearchPath: splitList(s["db-extra-search-path"]),
	}
	if len(cfg.schemas) == 0 {
		return nil, errors.New("db-schemas is empty")
	}
	for key, target := range map[string]*int{"db-pool": &cfg.pool, "server-port": &cfg.port} {
		if *target, err = strconv.Atoi(s[key]); err != nil {
			return nil, fmt.Errorf("%s: not an integer: %q", key, s[key])
		}
	}
	if cfg.pool < 1 {
		return nil, fmt.Errorf("db-pool: must be at least 1, not %d", cfg.pool)
	}
	seconds, err := strconv.Atoi(s["db-pool-acquisition-timeout"])
	if err != nil {
		return nil, fmt.Errorf("db-pool-acquisition-timeout: not an integer: %q",
			s["db-pool-acquisition-timeout"])
	}
	cfg.acquisitionTimeout = time.Duration(seconds) * time.Second
	if secret, set := s["jwt-secret"]; set {
		cfg.jwtSecret = []byte(secret)
		if s["jwt-secret-is-base64"] == "true" {
			if cfg.jwtSecret, err = base64.StdEncoding.DecodeString(secret); err != nil {
				return nil, fmt.Errorf("jwt-secret: not base64: %v", err)
			}
		}
	}
	cfg.host = s["server-host"]
	switch cfg.host {
	case "!4", "*4", "*":
		cfg.host = "0.0.0.0"
	case "!6", "*6":
		cfg.host = "::"
	}
	return cfg, nil
}
