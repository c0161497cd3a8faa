module github.com/hoistgg/hoist

go 1.26

require (
	github.com/aws/aws-sdk-go v1.55.8 // indirect
	github.com/aws/aws-sdk-go-v2 v1.47.7 // indirect
	github.com/aws/aws-sdk-go-v2/credentials v1.20.15 // indirect
	github.com/aws/aws-sdk-go-v2/internal/configsources v1.5.10 // indirect
	github.com/aws/aws-sdk-go-v2/internal/endpoints/v2 v2.8.10 // indirect
	github.com/aws/aws-sdk-go-v2/service/gamelift v1.55.0 // indirect
	github.com/aws/smithy-go v1.28.8 // indirect
	github.com/fxamacker/cbor/v2 v2.9.0 // indirect
	github.com/jmespath/go-jmespath v0.4.0 // indirect
	github.com/x448/float16 v0.8.4 // indirect
)
