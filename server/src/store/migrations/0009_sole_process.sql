CREATE TABLE "sole_process" (
	"id" text PRIMARY KEY NOT NULL,
	"holder" text NOT NULL,
	"node" text NOT NULL,
	"expires_at" bigint NOT NULL
);
