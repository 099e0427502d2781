// Package pgtest gives tests a fresh database on a real PostgreSQL server:
// the one AMBIT_TEST_POSTGRES names (an administrator's postgres:// URL),
// which `make test` starts for the run. Without it the tests that need
// PostgreSQL skip, unless AMBIT_REQUIRE_POSTGRES is set, when they fail.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Env names the server's administrator URL.
const Env = "AMBIT_TEST_POSTGRES"

// Database creates an empty database for the test, dropped when it ends,
// and returns its URL.
func Database(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(Env)
	if admin == "" {
		if os.Getenv("AMBIT_REQUIRE_POSTGRES") != "" {
			t.Fatalf("%s is not set: start a server with `make test`", Env)
		}
		t.Skipf("%s is not set; `make test` starts a PostgreSQL server for these tests", Env)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connect to %s: %v", Env, err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "ambit_test_" + hex.EncodeToString(b[:])
	// The C collation: text compares byte by byte, as in SQLite.
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+name+` TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'`); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("%s: %v", Env, err)
	}
	u.Path = "/" + name
	return u.String()
}
