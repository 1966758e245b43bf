ALTER TABLE "versions" ADD COLUMN "purged_record_id" text;--> statement-breakpoint
ALTER TABLE "versions" ADD COLUMN "purged_by" text;