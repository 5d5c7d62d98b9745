"""Response shapes of the notifications routes, for the OpenAPI schema (the views answer plain
dicts built by notifications/subscriptions.py)."""

from rest_framework import serializers


class DeliverySerializer(serializers.Serializer):
    deliveryId = serializers.UUIDField()
    event = serializers.CharField()
    method = serializers.ChoiceField(choices=["WEBHOOK", "EMAIL"])
    address = serializers.CharField()
    attempt = serializers.IntegerField()
    time = serializers.CharField()
    ok = serializers.BooleanField()
    statusCode = serializers.IntegerField(allow_null=True)
    error = serializers.CharField(allow_null=True)
    retryInSeconds = serializers.IntegerField(allow_null=True)


class SubscriptionsSerializer(serializers.Serializer):
    subscriptions = serializers.ListField(
        child=serializers.DictField(), help_text="as in the job's request.notifications"
    )
    webhookSecret = serializers.CharField(
        allow_null=True, help_text="members of the job's project and admins only"
    )
    signatureHeader = serializers.CharField()
    deliveries = DeliverySerializer(many=True)
