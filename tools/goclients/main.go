// Command goclients runs the same scenario with two Go Kafka clients, franz-go and sarama,
// against a broker: create a topic of three partitions and find it in the topic list, produce
// keyed records in every compression codec, consume them all in a consumer group, commit, and
// check the group's committed offsets against the partitions' end offsets. It prints one line
// of counts and exits 0 when every record came back exactly once; otherwise it says what
// differed and exits 1.
//
//	goclients franz|sarama BROKER TOPIC
//
// With franz-transactions, franz-go's transactional session copies records instead (see
// runFranzTransactions).
//
//	goclients franz-transactions BROKER TOPIC
//
// With franz-group-protocol, franz-go consumes as a member of a KIP-848 consumer group until
// SIGTERM (see runFranzGroupProtocol).
//
//	goclients franz-group-protocol BROKER TOPIC GROUP ASSIGNOR INSTANCE
//
// With FERROLOG_SASL=MECHANISM:USER:PASSWORD (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512), franz-go
// authenticates with SASL; with FERROLOG_TLS_CA (and FERROLOG_TLS_CERT, FERROLOG_TLS_KEY) it
// speaks TLS.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// tlsConfig reads FERROLOG_TLS_CA (a PEM file of trusted certificates) and, if set,
// FERROLOG_TLS_CERT and FERROLOG_TLS_KEY (the client's certificate and key); nil without
// FERROLOG_TLS_CA.
func tlsConfig() (*tls.Config, error) {
	caFile := os.Getenv("FERROLOG_TLS_CA")
	if caFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", caFile)
	}
	config := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if certFile := os.Getenv("FERROLOG_TLS_CERT"); certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, os.Getenv("FERROLOG_TLS_KEY"))
		if err != nil {
			return nil, err
		}
		config.Certificates = []tls.Certificate{pair}
	}
	return config, nil
}

// saslSettings reads FERROLOG_SASL=MECHANISM:USER:PASSWORD.
func saslSettings() (mechanism, user, password string, ok bool) {
	parts := strings.SplitN(os.Getenv("FERROLOG_SASL"), ":", 3)
	if len(parts) != 3 {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// perCodec is how many records each codec's producer writes.
const perCodec = 200

var codecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// record is what was produced or consumed, by key and value.
type record struct{ key, value string }

func expected(topic string) []record {
	var all []record
	for _, codec := range codecs {
		for i := 0; i < perCodec; i++ {
			all = append(all, record{fmt.Sprintf("%s-%d", codec, i%17), fmt.Sprintf("%s %s %d", topic, codec, i)})
		}
	}
	return all
}

// sameRecords says what differs between what was produced and what came back.
func sameRecords(produced, consumed []record) error {
	sortRecords := func(records []record) {
		sort.Slice(records, func(i, j int) bool {
			if records[i].value != records[j].value {
				return records[i].value < records[j].value
			}
			return records[i].key < records[j].key
		})
	}
	sortRecords(produced)
	sortRecords(consumed)
	if len(produced) != len(consumed) {
		return fmt.Errorf("produced %d records, consumed %d", len(produced), len(consumed))
	}
	for i := range produced {
		if produced[i] != consumed[i] {
			return fmt.Errorf("record %d: produced %+v, consumed %+v", i, produced[i], consumed[i])
		}
	}
	return nil
}

// eventually retries check every 100 ms for up to 10 s; its last error if it never passes.
func eventually(check func() error) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func main() {
	if len(os.Args) == 7 && os.Args[1] == "franz-group-protocol" {
		if err := runFranzGroupProtocol(os.Args[2], os.Args[3], os.Args[4], os.Args[5], os.Args[6]); err != nil {
			fmt.Fprintf(os.Stderr, "franz-group-protocol: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: goclients franz|sarama|franz-transactions BROKER TOPIC")
		os.Exit(2)
	}
	client, broker, topic := os.Args[1], os.Args[2], os.Args[3]
	var err error
	switch client {
	case "franz":
		err = runFranz(broker, topic)
	case "sarama":
		err = runSarama(broker, topic)
	case "franz-transactions":
		err = runFranzTransactions(broker, topic)
	default:
		err = fmt.Errorf("unknown client %q", client)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", client, err)
		os.Exit(1)
	}
}
