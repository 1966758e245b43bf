CREATE TABLE "oauth_entries" (
	"model" text NOT NULL,
	"id" text NOT NULL,
	"payload" jsonb NOT NULL,
	"grant_id" text,
	"account_id" text,
	"uid" text,
	"user_code" text,
	"expires_at" bigint,
	"consumed_at" bigint,
	"last_used_at" bigint,
	CONSTRAINT "oauth_entries_model_id_pk" PRIMARY KEY("model","id")
);
--> statement-breakpoint
CREATE INDEX "oauth_entries_grant_idx" ON "oauth_entries" USING btree ("grant_id");--> statement-breakpoint
CREATE INDEX "oauth_entries_account_idx" ON "oauth_entries" USING btree ("model","account_id");--> statement-breakpoint
CREATE INDEX "oauth_entries_uid_idx" ON "oauth_entries" USING btree ("uid");--> statement-breakpoint
CREATE INDEX "oauth_entries_expires_idx" ON "oauth_entries" USING btree ("expires_at");