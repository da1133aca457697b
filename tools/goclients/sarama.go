package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

func saramaCodec(name string) sarama.CompressionCodec {
	switch name {
	case "gzip":
		return sarama.CompressionGZIP
	case "snappy":
		return sarama.CompressionSnappy
	case "lz4":
		return sarama.CompressionLZ4
	case "zstd":
		return sarama.CompressionZSTD
	}
	return sarama.CompressionNone
}

func saramaConfig() *sarama.Config {
	config := sarama.NewConfig()
	config.Version = sarama.V3_6_0_0
	config.ClientID = "goclients-sarama"
	return config
}

// collector is a consumer group handler that keeps every record and marks it consumed.
type collector struct {
	mu       sync.Mutex
	consumed []record
	want     int
	done     context.CancelFunc
}

func (c *collector) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (c *collector) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (c *collector) ConsumeClaim(session sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for message := range claim.Messages() {
		c.mu.Lock()
		c.consumed = append(c.consumed, record{string(message.Key), string(message.Value)})
		if len(c.consumed) >= c.want {
			c.done()
		}
		c.mu.Unlock()
		session.MarkMessage(message, "")
	}
	return nil
}

func runSarama(broker, topic string) error {
	brokers := []string{broker}
	admin, err := sarama.NewClusterAdmin(brokers, saramaConfig())
	if err != nil {
		return err
	}
	defer admin.Close()
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1}, false); err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	// A new topic reaches every broker's metadata a moment after CreateTopics answers
	// (Kafka's KRaft brokers learn it from the controller), so the list is asked again.
	if err := eventually(func() error {
		listed, err := admin.ListTopics()
		if err != nil {
			return fmt.Errorf("list topics: %w", err)
		}
		if detail, ok := listed[topic]; !ok || detail.NumPartitions != 3 {
			return fmt.Errorf("topic list has no %s of 3 partitions", topic)
		}
		return nil
	}); err != nil {
		return err
	}

	produced := expected(topic)
	for index, codec := range codecs {
		config := saramaConfig()
		config.Producer.Return.Successes = true
		config.Producer.RequiredAcks = sarama.WaitForAll
		config.Producer.Idempotent = true
		config.Net.MaxOpenRequests = 1
		config.Producer.Compression = saramaCodec(codec)
		producer, err := sarama.NewSyncProducer(brokers, config)
		if err != nil {
			return err
		}
		var messages []*sarama.ProducerMessage
		for _, r := range produced[index*perCodec : (index+1)*perCodec] {
			messages = append(messages, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(r.key), Value: sarama.StringEncoder(r.value)})
		}
		err = producer.SendMessages(messages)
		producer.Close()
		if err != nil {
			return fmt.Errorf("produce %s: %w", codec, err)
		}
	}

	group := topic + "-group"
	config := saramaConfig()
	config.Consumer.Offsets.Initial = sarama.OffsetOldest
	consumerGroup, err := sarama.NewConsumerGroup(brokers, group, config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done, stop := context.WithCancel(ctx)
	handler := &collector{want: len(produced), done: stop}
	for done.Err() == nil {
		if err := consumerGroup.Consume(done, []string{topic}, handler); err != nil {
			consumerGroup.Close()
			return fmt.Errorf("consume: %w", err)
		}
	}
	// Closing commits what was marked.
	if err := consumerGroup.Close(); err != nil {
		return fmt.Errorf("close consumer group: %w", err)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("consumed %d of %d records before the deadline", len(handler.consumed), len(produced))
	}
	if err := sameRecords(produced, handler.consumed); err != nil {
		return err
	}

	committed, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1, 2}})
	if err != nil {
		return fmt.Errorf("fetch offsets: %w", err)
	}
	client, err := sarama.NewClient(brokers, saramaConfig())
	if err != nil {
		return err
	}
	defer client.Close()
	var total int64
	for partition := int32(0); partition < 3; partition++ {
		end, err := client.GetOffset(topic, partition, sarama.OffsetNewest)
		if err != nil {
			return fmt.Errorf("end offset: %w", err)
		}
		block := committed.GetBlock(topic, partition)
		if block == nil || block.Offset != end {
			return fmt.Errorf("partition %d: committed %v, end %d", partition, block, end)
		}
		total += end
	}
	fmt.Printf("sarama: produced %d, consumed %d, committed %d\n", len(produced), len(handler.consumed), total)
	return nil
}
