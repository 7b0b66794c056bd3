output "bucket_arn" {
  description = "ARN of the bucket, known at plan time."
  value       = local.bucket_arn

  # Consumers must not use the bucket before it is private and encrypted.
  depends_on = [
    aws_s3_bucket_public_access_block.this,
    aws_s3_bucket_server_side_encryption_configuration.this,
    aws_s3_bucket_policy.this,
  ]
}

output "bucket_name" {
  description = "Name of the bucket."
  value       = aws_s3_bucket.this.bucket
}

output "bucket_regional_domain_name" {
  description = "Region-specific domain name of the bucket, for clients and CloudFront origins."
  value       = aws_s3_bucket.this.bucket_regional_domain_name
}
