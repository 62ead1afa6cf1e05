// A Go client that makes the requests Mellanox/ib-kubernetes's UFM plugin makes
// (its pkg/sm/plugins/ufm and pkg/drivers/http): the same environment, methods,
// paths, headers and bodies, over Go's own net/http and crypto/tls. The plugin
// itself cannot be built here (its modules come from the Go module proxy); this
// checks ibsmd's partition API against the HTTP stack it is written for.
//
// Environment as the plugin's: UFM_USERNAME, UFM_PASSWORD, UFM_ADDRESS, UFM_PORT,
// UFM_HTTP_SCHEMA (default https), UFM_CERTIFICATE (PEM; without it the server's
// certificate is not verified, as the plugin does).
//
// Arguments, run in order:
//
//	version                  GET /ufmRest/app/ufm_version, 200 expected
//	add:PKEY:GUID,GUID       AddGuidsToPKey (GUIDs as EUI-64 MACs, 02:00:..)
//	remove:PKEY:GUID,GUID    RemoveGuidsFromPKey
//	list                     ListGuidsInUse: prints "GUID PKEY" lines, sorted
//	status:CODE:add:...      the request of the rest, CODE expected instead of 200
//
// Exit 1 on any unexpected answer.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
)

type client struct {
	http     *http.Client
	base     string
	user     string
	password string
}

func fail(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "ufm_client: "+format+"\n", a...)
	os.Exit(1)
}

func newClient() *client {
	schema := strings.ToLower(os.Getenv("UFM_HTTP_SCHEMA"))
	if schema == "" {
		schema = "https"
	}
	port := os.Getenv("UFM_PORT")
	if port == "" {
		port = "443"
		if schema != "https" {
			port = "80"
		}
	}
	tr := http.DefaultTransport.(*http.Transport)
	if schema == "https" {
		if pem := os.Getenv("UFM_CERTIFICATE"); pem != "" {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM([]byte(pem)) {
				fail("UFM_CERTIFICATE holds no certificate")
			}
			tr.TLSClientConfig = &tls.Config{RootCAs: pool}
		} else {
			tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec
		}
	}
	return &client{
		http:     &http.Client{Transport: tr},
		base:     fmt.Sprintf("%s://%s:%s", schema, os.Getenv("UFM_ADDRESS"), port),
		user:     os.Getenv("UFM_USERNAME"),
		password: os.Getenv("UFM_PASSWORD"),
	}
}

// do sends one request and checks its status.
func (c *client) do(method, path string, body []byte, want int) []byte {
	req, err := http.NewRequest(method, c.base+path, bytes.NewBuffer(body))
	if err != nil {
		fail("%s %s: %v", method, path, err)
	}
	req.SetBasicAuth(c.user, c.password)
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp, err := c.http.Do(req)
	if err != nil {
		fail("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	// Stricter than the plugin, which ignores a body that ends early.
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		fail("%s %s: reading the answer: %v", method, path, err)
	}
	if resp.StatusCode != want {
		fail("%s %s: status %d, expected %d: %s", method, path, resp.StatusCode, want, got)
	}
	return got
}

// guids reads "02:00:..,02:00:.." into the plugin's GUID strings (the MAC's
// String() without its colons).
func guids(list string) string {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if s == "" {
			continue
		}
		hw, err := net.ParseMAC(s)
		if err != nil {
			fail("%q: %v", s, err)
		}
		out = append(out, fmt.Sprintf("%q", strings.Replace(hw.String(), ":", "", -1)))
	}
	return strings.Join(out, ",")
}

func pkeyOf(s string) int {
	v, err := strconv.ParseInt(strings.TrimPrefix(s, "0x"), 16, 32)
	if err != nil {
		fail("pkey %q: %v", s, err)
	}
	return int(v)
}

func (c *client) run(op string, want int) {
	parts := strings.Split(op, ":")
	switch parts[0] {
	case "version":
		c.do(http.MethodGet, "/ufmRest/app/ufm_version", nil, want)
	case "add":
		p := pkeyOf(parts[1])
		body := fmt.Sprintf(`{"pkey": "0x%04X", "index0": true, "ip_over_ib": true, "membership": "full", "guids": [%v]}`,
			p, guids(strings.Join(parts[2:], ":")))
		c.do(http.MethodPost, "/ufmRest/resources/pkeys", []byte(body), want)
	case "remove":
		p := pkeyOf(parts[1])
		body := fmt.Sprintf(`{"pkey": "0x%04X", "guids": [%v]}`, p, guids(strings.Join(parts[2:], ":")))
		c.do(http.MethodPost, "/ufmRest/actions/remove_guids_from_pkey", []byte(body), want)
	case "list":
		raw := c.do(http.MethodGet, "/ufmRest/resources/pkeys/?guids_data=true", nil, want)
		var pkeys map[string]struct {
			Guids []struct {
				GUID string `json:"guid"`
			} `json:"guids"`
		}
		if err := json.Unmarshal(raw, &pkeys); err != nil {
			fail("list: %v: %s", err, raw)
		}
		var lines []string
		for pkey, p := range pkeys {
			for _, g := range p.Guids {
				lines = append(lines, g.GUID+" "+pkey)
			}
		}
		sort.Strings(lines)
		for _, l := range lines {
			fmt.Println(l)
		}
	default:
		fail("unknown operation %q", op)
	}
}

func main() {
	c := newClient()
	for _, op := range os.Args[1:] {
		want := http.StatusOK
		if strings.HasPrefix(op, "status:") {
			parts := strings.SplitN(op, ":", 3)
			code, err := strconv.Atoi(parts[1])
			if err != nil {
				fail("%q: %v", op, err)
			}
			want, op = code, parts[2]
		}
		c.run(op, want)
	}
}
